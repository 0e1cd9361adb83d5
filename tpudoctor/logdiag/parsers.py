"""Evidence that one regex cannot pull from a log event: named parsers the catalog refers to.

``hbm_allocations``: XLA's out-of-memory report (the largest allocations, each with its size,
shape, padding, op and source line). ``grpc_status``: the gRPC status code in a ``grpc_status``
JSON field, with its name. ``fatal_event``: what an unrecognised crash was (exception type and
message, the failing line, the last Python frame; for a native abort, the line that tells its cause).
``cause_family``: the family of cause an unrecognised error's own words name (``cause_families.toml``).
Each parser takes the event's text and the offset of the signature's match and returns evidence.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from tpudoctor.logs.sizes import parse_size as parse_bytes  # noqa: F401 - the one size reader

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_ALLOCATIONS = 10
MAX_FIELD_CHARS = 300

# https://grpc.github.io/grpc/core/md_doc_statuscodes.html
GRPC_STATUS_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

def hbm_allocations(text: str, offset: int) -> dict[str, Any]:
    """An out-of-memory report's figures and largest allocations, read by the one OOM grammar
    (``tpudoctor.logs.oom``, which ``tpudoctor memory`` reads too): ``largest_allocations`` (each with its size,
    shape, padding, op and source line), the fixes those buffers support (``fixes``, ranked as ``tpudoctor memory``
    ranks them) and the figures the text states, named as the catalog's extracts name
    them (``hbm_used_bytes``, ``hbm_capacity_bytes``, ``hbm_excess_bytes``, ``hbm_requested_bytes``,
    ``hbm_free_bytes``, ``hbm_required_bytes``; ``vmem_...`` for another space): a signature's own extract of the
    same figure is kept."""
    from tpudoctor.logs.oom import parse_oom_reports

    reports = parse_oom_reports(text)
    if not reports:
        return {}
    report = next((r for r in reports if r.allocations), reports[0])
    found: dict[str, Any] = {}
    allocations = [_allocation_evidence(a) for a in report.allocations[:MAX_ALLOCATIONS]]
    if allocations:
        found["largest_allocations"] = allocations
    found.update(_oom_figures(reports[0]))
    fixes = _text_fixes(report)
    if fixes:
        found["fixes"] = fixes
    return found


def _text_fixes(report) -> list[dict[str, Any]]:
    """The fixes the listing's own buffers support, ranked as ``tpudoctor memory`` ranks them (estimates from text)."""
    from tpudoctor.memory.oom_fixes import rank_text_fixes

    return [{"id": fix.id, "fix": fix.fix, "saves_bytes_at_most": fix.saves_bytes_at_most, "basis": fix.basis,
             "enough": fix.enough} for fix in rank_text_fixes(report)]


def _allocation_evidence(a) -> dict[str, Any]:
    entry: dict[str, Any] = {"rank": a.rank, "size_bytes": a.size_bytes}
    for key, value in (("shape", a.shape), ("unpadded_size_bytes", a.unpadded_bytes),
                       ("padding_bytes", a.padding_bytes), ("padding_expansion", a.padding_expansion),
                       ("op_type", a.op_type), ("op_name", a.op_name), ("source", a.source),
                       ("xla_label", a.xla_label), ("allocation_type", a.allocation_type)):
        if value is not None and value != "":
            entry[key] = value[:MAX_FIELD_CHARS] if isinstance(value, str) else value
    return entry


def _oom_figures(report) -> dict[str, int]:
    figures: dict[str, int | None] = {}
    space = next((part.memory_space for part in (report.header, report.program) if part is not None
                  and part.memory_space), "hbm")
    if report.header is not None:
        figures.update(used=report.header.used_bytes, capacity=report.header.capacity_bytes,
                       excess=report.header.exceeded_bytes)
    if report.program is not None:
        figures["required"] = report.program.total_bytes
    for failure in (report.reservation, report.allocation_failure):
        if failure is not None:
            figures.update(requested=failure.requested_bytes, free=failure.free_bytes)
    if report.reservation is not None:
        figures["capacity"] = figures.get("capacity") or report.reservation.capacity_bytes
    if report.early_abort is not None:
        figures.update(required=report.early_abort.required_bytes, capacity=report.early_abort.available_bytes)
    return {f"{space}_{name}_bytes": value for name, value in figures.items() if value is not None}


_GRPC_STATUS = re.compile(r'"grpc_status"\s*:\s*(\d+)')


def grpc_status(text: str, offset: int) -> dict[str, Any]:
    """The gRPC status code of the first ``"grpc_status":N`` field, with its name (14: UNAVAILABLE)."""
    match = _GRPC_STATUS.search(text)
    if match is None:
        return {}
    code = int(match.group(1))
    return {"grpc_status_code": code, "grpc_status_name": GRPC_STATUS_NAMES.get(code, "UNKNOWN")}


_EXCEPTION = re.compile(
    r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Failure)|(?:[a-z_][a-z0-9_]*\.){2,}[A-Z][a-z]\w*)"
    r"(?: \(see above for traceback\))?(?::\s?(.*))?$"
)
_FRAME = re.compile(r'File "([^"]+)", line (\d+)|^-+>\s*(\d+)\s', re.MULTILINE)
_SIGNAL = re.compile(r"\b(SIG[A-Z]{2,6})\b")
_ROOT_ERRORS = re.compile(r"^[0-9]+ root error\(s\) found\.$")


def fatal_event(text: str, offset: int) -> dict[str, Any]:
    """What the crash at ``offset`` was: the failing line, the exception type and message (or the
    signal, or the failed check), and the last Python frame before it."""
    end = text.find("\n", offset)
    line = text[offset: end if end >= 0 else len(text)].strip()
    found: dict[str, Any] = {"failure": line[:MAX_FIELD_CHARS]}
    exception = _EXCEPTION.search(line)
    signal = _SIGNAL.search(line)
    if "Check failed" in line:
        found["failure_type"] = "Check failed"
        found["failure_message"] = line.split("Check failed", 1)[1].lstrip(": ")[:MAX_FIELD_CHARS]
    elif exception is not None:
        found["failure_type"] = exception.group(1)
        found["failure_message"] = (exception.group(2) or "").strip()[:MAX_FIELD_CHARS]
    elif signal is not None:
        found["failure_type"] = signal.group(1)
        found["failure_message"] = line[:MAX_FIELD_CHARS]
    else:
        found["failure_type"] = "fatal"
        found["failure_message"] = line[:MAX_FIELD_CHARS]
    if found["failure_message"].endswith(":"):  # "From /job:worker/replica:0/task:0:": the message follows
        after = [ln.strip() for ln in text[end + 1:].split("\n")[:4]] if end >= 0 else []
        after = [ln for ln in after if ln and not _ROOT_ERRORS.match(ln)][:1]
        if after:
            found["failure_message"] = f"{found['failure_message']} {after[0]}"[:MAX_FIELD_CHARS]
    native = native_cause(text, offset)
    if native is not None:
        found["native_cause"] = native
        if found["failure_type"] in ("fatal", "SIGABRT", "SIGSEGV") or "terminate called" in line:
            thrown = _THROWN.search(line)
            if thrown:
                found["failure_type"] = thrown.group(1)
            found["failure_message"] = native[:MAX_FIELD_CHARS]
    frames = list(_FRAME.finditer(text, 0, offset))
    if frames:
        last = frames[-1]
        found["raised_at"] = f"{last.group(1)}:{last.group(2)}" if last.group(1) else f"cell line {last.group(3)}"
    return found


_NATIVE_ABORT = re.compile(r"terminate called|SIGABRT|SIGSEGV|Aborted|Segmentation fault|signal (?:6|11)\b|core dumped")
_THROWN = re.compile(r"terminate called after throwing an instance of '([^']+)'")
# The lines a native abort's cause is printed in, before it (or, for std::terminate, right after it).
_NATIVE_TELLS = re.compile(r"^\s*what\(\):\s*(\S.*)$|\[libprotobuf (?:FATAL|ERROR) [^\]]*\]\s*(\S.*)$"
                           r"|\b(?:Check|CHECK) failed:?\s*(\S.*)$|^F\d{4} [^\]]*\]\s*(\S.*)$")
_CLASH = re.compile(r"File already exists in database|already registered")
NATIVE_LOOKBACK_LINES = 12


def native_cause(text: str, offset: int) -> str | None:
    """For a native abort (``terminate called``, SIGABRT, a segfault): the line that says why, from
    ``what():`` after it or the last FATAL / ERROR / failed-check line of the few before it."""
    end = text.find("\n", offset)
    line = text[offset: end if end >= 0 else len(text)]
    if not _NATIVE_ABORT.search(line) and not _NATIVE_TELLS.search(line):
        return None
    after = text[end + 1:].split("\n", 3)[:3] if end >= 0 and "terminate called" in line else []
    for candidate in after:
        m = _NATIVE_TELLS.match(candidate)
        if m and m.group(1):
            return m.group(1).strip()[:MAX_FIELD_CHARS]
    before = text[:offset].split("\n")[-NATIVE_LOOKBACK_LINES - 1:-1]
    told = None
    for candidate in before:
        m = _NATIVE_TELLS.search(candidate)
        if m:
            told = next(g for g in m.groups() if g)
            if _CLASH.search(candidate):
                break  # the descriptor clash itself says more than the CHECK it trips
    if told is None and _NATIVE_ABORT.search(line) is None:
        return None  # a failed check with nothing before it: the line says it all
    return told.strip()[:MAX_FIELD_CHARS] if told else None


@dataclasses.dataclass(frozen=True)
class CauseFamily:
    id: str
    label: str
    words: re.Pattern[str]
    check: str


CAUSE_FAMILIES_FILE = "cause_families.toml"


@cache
def load_cause_families() -> tuple[CauseFamily, ...]:
    data = tomllib.loads(resources.files(__package__).joinpath(CAUSE_FAMILIES_FILE).read_text(encoding="utf-8"))
    return tuple(CauseFamily(f["id"], f["label"], re.compile(f["words"], re.IGNORECASE), f["check"])
                 for f in data["family"])


def family_of(text: str) -> tuple[CauseFamily, str] | None:
    """The first family whose words ``text`` holds, with the words."""
    for family in load_cause_families():
        m = family.words.search(text)
        if m:
            return family, m.group(0)
    return None


def cause_family(text: str, offset: int) -> dict[str, Any]:
    """What the unrecognised error is about, by its own words: the failing line, and for a native abort the
    line that tells its cause. Always sets ``cause_family_text`` (empty when no family's words are there)."""
    end = text.find("\n", offset)
    line = text[offset: end if end >= 0 else len(text)].strip()
    told = native_cause(text, offset)
    found = family_of(f"{told}\n{line}" if told else line)
    if found is None:
        check = ("a native crash that printed no cause: rerun with PYTHONFAULTHANDLER=1 for the Python frames, or "
                 "under `gdb -batch -ex bt --args python ...` for the native ones" if _NATIVE_ABORT.search(line)
                 else "the lines just before it: the first error in time is usually the cause")
        return {"cause_family": "unknown", "cause_family_text": "", "cause_family_check": check}
    family, words = found
    return {"cause_family": family.id, "cause_family_words": words[:80],
            "cause_family_text": f"; by its own words ({words[:80]!r}) {family.label}",
            "cause_family_check": family.check}


_OBSERVED = re.compile(r"observed errors are:\s*\[([^\]\n]{1,60})\]")


def report_host_command(text: str, offset: int) -> dict[str, Any]:
    """For a TPU core that halted on an infrastructure fault: the errors the runtime observed and the ``gcloud``
    command that reports the host as faulty, as ``diag`` gives it (the TPU's name and zone are not in a log)."""
    from tpudoctor.cloud_knowledge import gcloud

    observed = _OBSERVED.search(text)
    kind = observed.group(1) if observed else "Hardware"
    return {"observed_errors": kind,
            "report_host_command": gcloud.report_host_as_faulty(
                None, None, None, f"tpudoctor check: TPU core halted; observed errors [{kind}] (XLA E0200)")}


def excerpt_lines(text: str, offset: int) -> dict[str, Any]:
    """How many lines the excerpt has (the outcome-unknown finding is about the whole of it)."""
    return {"log_lines": text.count("\n") + 1}


PARSERS: dict[str, Callable[[str, int], dict[str, Any]]] = {
    "excerpt_lines": excerpt_lines,
    "report_host_command": report_host_command,
    "hbm_allocations": hbm_allocations,
    "grpc_status": grpc_status,
    "fatal_event": fatal_event,
    "cause_family": cause_family,
}
