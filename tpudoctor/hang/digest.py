"""Megascale hang digests in logs (multislice jobs, JAX >= 0.4.33; in the logs of worker 0 of slice 0).

The coordinator logs one digest per hang, as one LOG(ERROR) record whose first line starts
``Megascale detects a hang`` and whose next lines (unprefixed) hold ``Full error digest:`` with
``Potential cause:``, ``Potential culprit workers:``, ``TPU stats:`` / ``TPU states:`` (per host: program
counter, or per module: fingerprint, launch id and ``tag:pc(hlo): host`` entries) and ``TPU program
fingerprints:``. Each worker that times out also logs ``Megascale hang detected: Timed out waiting for N
graphs to complete at launch_id L. Already completed: C. StepGloballyInProgress: true. Timeout: 5m``.
The shapes follow the Megascale hang playbook (MaxText docs) and XLA's Megascale debugging workflow.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Iterable
from typing import Any

from tpudoctor.logs.clock import UTC, Zone

MAX_DIGEST_LINES = 400
MAX_TEXT_CHARS = 8000
_PREFIX = re.compile(r"^[IWEF]\d{4}\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+[^\]\s]+\]\s?")
_START = re.compile(r"Megascale detects a hang|Some workers have halted with an unrecoverable error")
_DETECTED = re.compile(r"Megascale hang detected: Timed out waiting for (\d+) graphs to complete at launch_id "
                       r"(\d+)\. Already completed: (\d+)\. StepGloballyInProgress: (\w+)\.?\s*Timeout: (\S+)")
_HOST_LISTS = re.compile(r"^(?:The host that have bad TPUs are|The hosts are|The host that have data input "
                         r"stalls are|Example hosts that have different HLO (?:fingerprints|modules)):\s*(.*)$")
_MODULE_ENTRY = re.compile(r"^(?P<tag>[^:\s]+):(?P<pc>[^(\s]+)\((?P<hlo>[^)]*)\):\s*(?P<hosts>.+)$")
_TPU_VM_WORKER = re.compile(r"-w-(\d+)$")
CAUSES = (  # (normalised cause, words in the headline or the ``Potential cause:`` field)
    ("bad_sparse_core_chip", re.compile(r"sparse core", re.I)),
    ("bad_tpu_chip", re.compile(r"bad TPU|BAD_TPU_CHIP|bad tensor core", re.I)),
    ("networking", re.compile(r"network", re.I)),
    ("different_module", re.compile(r"different modules?|DIFFERENT_MODULE", re.I)),
    ("fingerprint_mismatch", re.compile(r"fingerprint mismatch|inconsistent HLO module compilation|"
                                        r"FINGERPRINT_MISMATCH", re.I)),
    ("inconsistent_program", re.compile(r"inconsistent TPU programs?|INCONSISTENT_TPU_PROGRAM", re.I)),
    ("data_input_stall", re.compile(r"data input stall|DATA_INPUT_STALL", re.I)),
    ("program_not_queued", re.compile(r"PROGRAM_NOT_QUEUED|not queued", re.I)),
    ("unrecoverable_error", re.compile(r"unrecoverable error|UNRECOVERABLE", re.I)),
    ("unknown", re.compile(r"cannot determine the root cause|UNKNOWN_CAUSE", re.I)),
)


@dataclasses.dataclass
class HangDigest:
    source: str
    line_no: int
    logged_at: _dt.datetime | None
    kind: str
    """``digest`` (the coordinator's verdict), ``timed_out`` (one worker's HANG_DETECTED line) or
    ``unrecoverable`` (workers halted with an error)."""
    cause: str | None = None
    """Normalised: one of ``CAUSES``' names, or None when the record names none."""
    headline: str = ""
    culprit_workers: list[str] = dataclasses.field(default_factory=list)
    """As written: ``job/3:host`` or ``host``."""
    culprit_hosts: list[str] = dataclasses.field(default_factory=list)
    program_counters: dict[str, str] = dataclasses.field(default_factory=dict)
    fingerprints: dict[str, str] = dataclasses.field(default_factory=dict)
    modules: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """``TPU states``: [{module, fingerprint, launch_id, entries: [{tag, pc, hlo, host}]}]."""
    launch_id: int | None = None
    timeout: str | None = None
    text: str = ""

    @property
    def nonzero_pc_hosts(self) -> list[str]:
        hosts = [h for h, pc in self.program_counters.items() if not _is_zero(pc)]
        for module in self.modules:
            hosts += [e["host"] for e in module["entries"] if not _is_zero(e["pc"])]
        return list(dict.fromkeys(hosts))

    @property
    def zero_pc_hosts(self) -> list[str]:
        hosts = [h for h, pc in self.program_counters.items() if _is_zero(pc)]
        for module in self.modules:
            hosts += [e["host"] for e in module["entries"] if _is_zero(e["pc"])]
        return list(dict.fromkeys(hosts))

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["logged_at"] = self.logged_at.isoformat() if self.logged_at else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HangDigest:
        values: dict[str, Any] = {f.name: data.get(f.name) for f in dataclasses.fields(cls) if f.name in data}
        values["logged_at"] = _dt.datetime.fromisoformat(data["logged_at"]) if data.get("logged_at") else None
        for name in ("culprit_workers", "culprit_hosts", "modules"):
            values[name] = list(values.get(name) or [])
        for name in ("program_counters", "fingerprints"):
            values[name] = dict(values.get(name) or {})
        return cls(**values)


def _is_zero(pc: str) -> bool:
    try:
        return int(pc, 0) == 0
    except ValueError:
        return pc.strip() in ("0", "")


def strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line.rstrip("\n"))


def find_digests(lines: Iterable[str], source: str, *, now: _dt.datetime | None = None,
                 tz: Zone = UTC) -> list[HangDigest]:
    """Every digest and HANG_DETECTED line in a log's lines, in order; zone-less times read in ``tz``."""
    from tpudoctor.hang.progress import line_time

    now = now or _dt.datetime.now(_dt.timezone.utc)
    found: list[HangDigest] = []
    block: list[str] | None = None
    start_no, start_time = 0, None
    for number, raw in enumerate(lines, start=1):
        prefixed = bool(_PREFIX.match(raw))
        line = strip_prefix(raw)
        if block is not None:
            ends = not _continues(line, prefixed) or len(block) >= MAX_DIGEST_LINES
            if not ends:
                block.append(line)
                continue
            found.append(parse_block(block, source, start_no, start_time))
            block = None
        if started := _START.search(line):
            block, start_no, start_time = [line[started.start():]], number, line_time(raw, now, tz)
        elif match := _DETECTED.search(line):
            found.append(HangDigest(source=source, line_no=number, logged_at=line_time(raw, now, tz), kind="timed_out",
                                    headline=line[match.start():].strip()[:500], launch_id=int(match.group(2)),
                                    timeout=match.group(5)))
    if block is not None:
        found.append(parse_block(block, source, start_no, start_time))
    return found


def _continues(line: str, prefixed: bool) -> bool:
    """Whether a line still belongs to the digest: an indented line, a field or a host list (some logs
    prefix every line of a record), or a blank line between its parts."""
    stripped = line.strip()
    if not stripped:
        return not prefixed
    return (line.startswith((" ", "\t")) or stripped.split(":", 1)[0] in _FIELD_NAMES
            or bool(_HOST_LISTS.match(stripped)) or stripped.startswith("Please "))


_FIELD_NAMES = {"Full error digest", "Potential cause", "Potential culprit workers", "TPU stats", "TPU states",
                "TPU program fingerprints", "Module", "Fingerprint", "Launch ID"}


def parse_block(block: list[str], source: str, line_no: int, logged_at: _dt.datetime | None) -> HangDigest:
    headline = block[0].strip()
    kind = "unrecoverable" if headline.startswith("Some workers have halted") else "digest"
    from tpudoctor.redact import scrub_secrets

    digest = HangDigest(source=source, line_no=line_no, logged_at=logged_at, kind=kind, headline=headline[:500],
                        text=scrub_secrets("\n".join(block)[:MAX_TEXT_CHARS]))
    section: str | None = None
    module: dict[str, Any] | None = None
    cause_field = None
    for raw in block[1:]:
        line = raw.strip()
        if not line:
            continue
        if match := _HOST_LISTS.match(line):
            digest.culprit_hosts += _split_hosts(match.group(1))
            continue
        key, sep, value = line.partition(":")
        value = value.strip()
        if sep and key == "Potential cause":
            cause_field = value
        elif sep and key == "Potential culprit workers":
            digest.culprit_workers += _split_hosts(value)
        elif sep and key in ("TPU stats", "TPU states", "TPU program fingerprints") and not value:
            section, module = key, None
        elif sep and key == "Module":
            module = {"module": value, "fingerprint": None, "launch_id": None, "entries": []}
            digest.modules.append(module)
        elif sep and key == "Fingerprint" and module is not None:
            module["fingerprint"] = value
        elif sep and key == "Launch ID" and module is not None:
            module["launch_id"] = int(value) if value.isdigit() else value
        elif (entry := _MODULE_ENTRY.match(line)) and module is not None:
            for host in _split_hosts(entry.group("hosts")):
                module["entries"].append({"tag": entry.group("tag"), "pc": entry.group("pc"),
                                          "hlo": entry.group("hlo"), "host": host})
        elif sep and section == "TPU stats" and value:
            digest.program_counters[key] = value
        elif sep and section == "TPU program fingerprints" and value:
            digest.fingerprints[key] = value
        elif kind == "unrecoverable" and sep and value and section is None:
            digest.culprit_workers.append(key.strip())
    digest.cause = normalise_cause(cause_field) or normalise_cause(headline)
    hosts = [_host_of(w) for w in digest.culprit_workers]
    digest.culprit_hosts = list(dict.fromkeys(digest.culprit_hosts + hosts))
    return digest


def normalise_cause(text: str | None) -> str | None:
    if not text:
        return None
    for name, pattern in CAUSES:
        if pattern.search(text):
            return name
    return None


def _split_hosts(text: str) -> list[str]:
    return [h.strip() for h in re.split(r"[,\s]+", text.strip()) if h.strip() and h.strip() != "..."]


def _host_of(worker: str) -> str:
    """``job/3:host-name`` -> ``host-name``; a bare name is the host."""
    return worker.rsplit(":", 1)[1] if "/" in worker and ":" in worker else worker


def worker_of_host(host: str, known: dict[str, str] | None = None) -> str | None:
    """The worker number of a host: from the workers' own reports, else a TPU VM name (``...-w-5``)."""
    if known and host in known:
        return known[host]
    match = _TPU_VM_WORKER.search(host)
    return match.group(1) if match else None
