"""Which stats become columns of ``HostProfile.events``, and ``LoadOptions``: the loader's settings in one place.

Plain Python (no numpy): the CLI and the executors build options before anything is decoded.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping

# Stats copied into ``HostProfile.events`` columns: name -> kind. An event's own stat wins over
# the same stat on its event metadata (where XLA puts static op facts: hlo_category, flops...).
EVENT_STAT_COLUMNS: dict[str, str] = {
    "step_num": "int",
    "iter_num": "int",
    "group_id": "int",
    "step_name": "str",
    "run_id": "int",
    "program_id": "uint",
    "replica_id": "int",
    "correlation_id": "uint",
    "device_offset_ps": "int",
    "device_duration_ps": "int",
    "self_duration_ps": "int",
    "hlo_category": "str",
    "hlo_op": "str",
    "hlo_module": "str",
    "tf_op": "str",
    "long_name": "str",
    "source": "str",
    "kernel_details": "str",
    "flops": "int",
    "model_flops": "int",
    "bytes_accessed": "int",
    "tf_function_call": "str",
    "tracing_count": "int",
    "is_eager": "int",
    "_r": "int",
    "_pt": "int",
    "_p": "uint",
    "_ct": "int",
    "_c": "uint",
}
# Integer stats that number or label things (steps, groups, runs, flow types), not quantities: kept in the
# narrowest type that holds their values. Quantities (flops, bytes, picoseconds) keep 64 bits, so that
# arithmetic on them cannot overflow; so do ids that are hashes (program_id, flow ids).
LABEL_STATS = frozenset({"step_num", "iter_num", "group_id", "run_id", "replica_id", "tracing_count", "is_eager",
                         "_r", "_pt", "_ct"})
STAT_KINDS = ("int", "uint", "float", "str")
DECODERS = ("auto", "jit", "numpy")
# Always columns of ``events``, all-missing when the capture lacks them; the other stats of
# EVENT_STAT_COLUMNS are columns only where the capture has them (a frame narrower by a dozen
# columns is much cheaper to filter: every boolean selection copies every column).
CORE_STAT_COLUMNS = ("step_num", "group_id", "program_id", "hlo_category", "tf_op", "long_name", "flops",
                     "bytes_accessed")

# The stats the analyses read (tpudoctor.profile.analysis); ``profile analyze`` decodes only these,
# since every dense stat column costs 9 bytes per event (flow ids, run/replica ids, model_flops... are not read).
ANALYSIS_STAT_COLUMNS: dict[str, str] = {name: EVENT_STAT_COLUMNS[name] for name in (
    "step_num", "group_id", "program_id", "device_offset_ps", "device_duration_ps", "hlo_category", "hlo_op",
    "hlo_module", "tf_op", "source", "flops", "model_flops", "bytes_accessed", "tf_function_call", "tracing_count",
)}
# XLA's static op facts: on the op's metadata, one value per op instead of one per execution
METADATA_STATS = ("flops", "model_flops", "bytes_accessed")
# The device ops' own stats and their op facts: on at most a quarter of a TPU capture's events, so ``profile
# analyze`` keeps them only where present (an integer column costs 9 bytes at every event, a text one 1)
DEVICE_OP_STATS = ("program_id", "device_offset_ps", "device_duration_ps", "hlo_category", "hlo_op", "tf_op", "source")

DEVICE_PLANE_PREFIXES = ("/device:TPU:", "/device:GPU:")
LINE_COLUMNS = ("plane_id", "line_id", "plane_name", "line_name")
"""An event's line's own columns: the same for every event of a line, so kept once per line (``HostProfile.lines``,
``.planes``) and read at the events with ``HostProfile.line_values``, not as ``events`` columns."""
DECODER_ENV = "TPUDOCTOR_PROFILE_DECODER"


def _decoder_from_environment() -> str:
    decoder = os.environ.get(DECODER_ENV, "") or "auto"
    if decoder not in DECODERS:
        from tpudoctor.errors import InputError

        raise InputError(f"{DECODER_ENV}={decoder!r} is not a profile decoder",
                         hint=f"set it to one of {', '.join(DECODERS)}, or unset it")
    return decoder


@dataclasses.dataclass(frozen=True)
class LoadOptions:
    """What a load decodes into ``HostProfile`` tables (picklable: it travels to worker processes).

    ``stats``: the stats decoded into ``events`` columns (name -> "int"|"uint"|"float"|"str"),
    ``EVENT_STAT_COLUMNS`` by default; ``extra_stats`` adds columns to them. ``metadata_stats``:
    integer stats left in ``event_metadata`` (read with ``HostProfile.stat_at``) when no event
    carries its own value. ``ValueError`` for a kind that is not one of ``STAT_KINDS``."""

    stats: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict(EVENT_STAT_COLUMNS))
    extra_stats: Mapping[str, str] = dataclasses.field(default_factory=dict)
    metadata_stats: Collection[str] = frozenset()
    decoder: str = dataclasses.field(default_factory=lambda: _decoder_from_environment())
    """"jit": numba's compiled decoder, "numpy": the numpy one, "auto" (default; ``DECODER_ENV`` sets
    another): the compiled one where numba is installed and the capture is big enough to pay for
    loading it (``reader.jit_decoder``)."""
    planes: Collection[str] | None = None
    """The names of the planes to decode (None: every plane); the others are skipped before their
    lines are read, and ``plane_id`` then counts the planes decoded."""
    events: Collection[str] | None = None
    """The event metadata names to decode (None: every event, unless ``lines`` is given); the others are
    dropped from their lines before the decoder reads them (``selection``)."""
    lines: Collection[str] | None = None
    """The names of the lines whose every event is decoded (None: every line, unless ``events`` is given); the
    other lines keep their headers and only the events named in ``events`` (none where it is None)."""
    lines_fallback_stats: Collection[str] = frozenset()
    """With ``lines``: until a line of those names is met (file order), the lines of a plane whose stat metadata
    names all of these stats keep all their events (a reader that falls back on them where there is no such
    line: memory's program runs on a JAX CPU capture, from the op events carrying program_id and run_id)."""
    whole_bytes_stats: Collection[str] = frozenset()
    """Event metadata stats whose bytes values ``event_metadata`` keeps whole (the ``Hlo Proto`` of a program);
    other long bytes values keep only their size."""
    sparse_stats: Collection[str] = frozenset()
    """Integer and text stats of ``columns`` kept only at the events that carry them (``HostProfile.sparse_stats``,
    read with ``HostProfile.stat_at``) instead of an ``events`` column (a text stat on more than a fifth of the
    events stays a column)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata_stats", frozenset(self.metadata_stats))
        object.__setattr__(self, "whole_bytes_stats", frozenset(self.whole_bytes_stats))
        object.__setattr__(self, "sparse_stats", frozenset(self.sparse_stats))
        if self.planes is not None:
            if isinstance(self.planes, str):
                raise ValueError(f"planes must be a collection of plane names, not the string {self.planes!r}")
            object.__setattr__(self, "planes", frozenset(self.planes))
        object.__setattr__(self, "lines_fallback_stats", frozenset(self.lines_fallback_stats))
        for field, what in (("events", "event names"), ("lines", "line names")):
            value = getattr(self, field)
            if value is not None:
                if isinstance(value, str):
                    raise ValueError(f"{field} must be a collection of {what}, not the string {value!r}")
                object.__setattr__(self, field, frozenset(value))
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, not {self.decoder!r}")
        for kind in self.columns.values():
            if kind not in STAT_KINDS:
                raise ValueError(f"stat column kind must be one of {STAT_KINDS}, not {kind!r}")
        for name in self.sparse_stats:
            if self.columns.get(name) not in ("int", "uint", "str"):
                raise ValueError(f"sparse stat {name!r} must be an integer or text stat of the columns")

    @property
    def columns(self) -> dict[str, str]:
        """Every stat decoded into a column, name -> kind (``stats`` then ``extra_stats``)."""
        return {**self.stats, **self.extra_stats}

    @classmethod
    def for_analysis(cls, extra_stats: Mapping[str, str] | None = None) -> LoadOptions:
        """Only what the analyses read (``profile analyze``): a narrower frame costs less memory, and
        XLA's op facts stay on the op metadata, the device ops' own stats at the events that carry them."""
        return cls(stats=dict(ANALYSIS_STAT_COLUMNS), extra_stats=dict(extra_stats or {}),
                   metadata_stats=METADATA_STATS, sparse_stats=DEVICE_OP_STATS)
