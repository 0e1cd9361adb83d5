"""Reader of an op trace: one row per recorded op of a pipeline-parallel job (parquet), with its
``meta-*.yaml`` beside it (the job's parallel sizes). The format is that of ByteDance's
StragglerAnalysis artifact (arXiv 2505.05713): ``dp_rank``, ``stage``, ``rank``, ``step``, ``optype``,
``start_ts``, ``duration`` (seconds), ``seq_id`` (order of one op type in a step on a worker), and for
compute ops ``mb_id`` (microbatch)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tpudoctor.errors import InputError

if TYPE_CHECKING:  # imported by read_op_trace: is_op_trace, asked first by every profile command, needs no pandas
    import pandas as pd

REQUIRED_COLUMNS = ("dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "seq_id")
META_SIZES = ("dp_size", "pp_size", "tp_size", "dsp_size", "vpp_size", "world_size")
PARQUET_SUFFIX = ".parquet"


@dataclasses.dataclass
class OpTrace:
    """The ops (``REQUIRED_COLUMNS`` and whatever else the file has; times in seconds) and the
    job's ``meta`` (parallel sizes; empty when no meta file is beside the trace)."""

    path: str
    ops: pd.DataFrame
    meta: dict[str, object]
    meta_path: str | None = None

    @property
    def workers(self) -> int:
        return int(self.ops["rank"].nunique())

    @property
    def steps(self) -> int:
        return int(self.ops["step"].nunique())


def is_op_trace(path: str | os.PathLike[str]) -> bool:
    return str(path).lower().endswith(PARQUET_SUFFIX)


def read_op_trace(path: str | os.PathLike[str]) -> OpTrace:
    """The trace at ``path`` and its meta file (``meta-<T>.yaml`` for ``trace-<T>.parquet``, else the
    only ``meta*.yaml`` beside it). ``InputError`` (exit 2) when it cannot be read or lacks a column."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    try:
        import pyarrow  # noqa: F401  (pandas' parquet engine)
    except ImportError as exc:
        raise InputError(f"{p}: reading a parquet op trace needs pyarrow, which is not installed",
                         hint="pip install 'tpudoctor[parquet]' (or: pip install pyarrow)") from exc
    import pandas as pd

    try:
        ops = pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises its own types for a truncated or foreign file
        raise InputError(f"{p}: not a readable parquet file ({type(exc).__name__}: {exc})") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in ops.columns]
    if missing:
        raise InputError(f"{p}: not an op trace: columns {', '.join(missing)} are missing "
                         f"(has {', '.join(map(str, ops.columns[:12]))})",
                         hint="one row per op with " + ", ".join(REQUIRED_COLUMNS))
    if ops.empty:
        raise InputError(f"{p}: the op trace has no rows")
    ops = ops.assign(optype=ops["optype"].astype(str))
    bad = ~(ops["duration"].astype(float) >= 0) | ops["start_ts"].isna()
    if bad.any():
        row = ops[bad].iloc[0]
        raise InputError(f"{p}: {int(bad.sum())} ops have a negative or missing time "
                         f"(first: rank {row['rank']} step {row['step']} {row['optype']} "
                         f"start {row['start_ts']} duration {row['duration']})")
    meta_path = _meta_path(p)
    meta = _read_meta(meta_path) if meta_path else {}
    return OpTrace(str(p), ops, meta, str(meta_path) if meta_path else None)


def _meta_path(trace: Path) -> Path | None:
    name = trace.name[: -len(PARQUET_SUFFIX)]
    tag = name.split("-", 1)[1] if "-" in name else name
    exact = trace.with_name(f"meta-{tag}.yaml")
    if exact.is_file():
        return exact
    found = sorted(trace.parent.glob("meta*.yaml"))
    return found[0] if len(found) == 1 else None


def _read_meta(path: Path) -> dict[str, object]:
    """A flat ``key: value`` YAML file (the meta's only form): integers where they are integers."""
    meta: dict[str, object] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        key, sep, value = text.partition(":")
        if not sep or not key.strip():
            raise InputError(f"{path}:{number}: not a 'key: value' line: {line.strip()!r}")
        value = value.strip().strip("'\"")
        meta[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return meta
