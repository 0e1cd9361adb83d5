"""The out-of-memory listings of a text (a log, a paste) as ``tpudoctor memory`` reports them: each listing a FAIL
finding quoting used, capacity and the largest allocations, its items reconciled with its header; what each fix
would save is ``unknown`` from text, and the finding says how to take a capture that tells."""

from __future__ import annotations

import dataclasses
from typing import Any

from tpudoctor.findings import (
    Confidence,
    ConfidenceLevel,
    Finding,
    Remediation,
    Severity,
    Status,
)
from tpudoctor.memory.fix_rule import FINDING_KIND
from tpudoctor.memory.oom_fixes import rank_text_fixes
from tpudoctor.units import format_bytes

TOP_OOM_ALLOCATIONS = 5
"""Largest allocations quoted in an out-of-memory finding's message (the document keeps them all)."""

CAPTURE_COMMANDS = (
    "tpudoctor profile capture --service-addr localhost:9012 --logdir /tmp/trace  # with "
    "jax.profiler.start_server(9012) in the job",
    "tpudoctor memory /tmp/trace",
)
"""What tells which fix saves how much where a text cannot: a capture of the step (its buffer plan)."""
CAPTURE_HINT = ("a text listing carries no buffer plan: take a capture of the step that runs out (with a smaller "
                "batch so that it fits, or the largest that does) and run tpudoctor memory on it")


@dataclasses.dataclass(frozen=True)
class TextInput:
    name: str
    oom: Any
    """``oom_text.OomText``: what the log holds, read as it streamed by."""


def _allocation_row(a) -> dict[str, Any]:
    return {"rank": a.rank, "memory_space": a.memory_space, "size_bytes": a.size_bytes, "shape": a.shape,
            "unpadded_bytes": a.unpadded_bytes, "padding_bytes": a.padding_bytes, "op_type": a.op_type,
            "op_name": a.op_name, "source": a.source, "xla_label": a.xla_label, "allocation_type": a.allocation_type}


def _block(block) -> dict[str, Any] | None:
    if block is None:
        return None
    return {"title": block.title, "total_bytes": block.total_bytes, "at_least": block.at_least,
            "items": [{"name": i.name, "bytes": i.bytes, "detail": i.detail} for i in block.items]}


def _listing(report) -> dict[str, Any]:
    header = report.header
    return {
        "header": None if header is None else {
            "memory_space": header.memory_space, "used_bytes": header.used_bytes,
            "capacity_bytes": header.capacity_bytes, "exceeded_bytes": header.exceeded_bytes,
            "at_compile": header.at_compile, "status": header.status, "error_code": header.error_code},
        "total": _block(report.total), "program": _block(report.program),
        "allocations": [_allocation_row(a) for a in report.allocations],
        "reservation": None if report.reservation is None else dataclasses.asdict(report.reservation),
        "allocation_failure": None if report.allocation_failure is None
        else dataclasses.asdict(report.allocation_failure),
        "reconciliations": [{"what": r.what, "header_bytes": r.header_bytes, "listed_bytes": r.listed_bytes,
                             "difference_bytes": r.difference_bytes, "ok": r.ok} for r in report.reconciliations],
        "problems": [r.what for r in report.problems],
        **_fixes(report)}


def _fixes(report) -> dict[str, Any]:
    ranked = rank_text_fixes(report)
    if not ranked:
        return {"fixes": "unknown", "fixes_why": CAPTURE_HINT}
    return {"fixes": [dataclasses.asdict(fix) for fix in ranked],
            "fixes_why": "estimates from the listing's own figures; " + CAPTURE_HINT}


def _headline(report) -> tuple[str, dict[str, Any]]:
    """What ran out, in a sentence, and its figures."""
    header = report.header
    figures: dict[str, Any] = {}
    space = next((block.memory_space for block in (header, report.total, report.program)
                  if block is not None and block.memory_space), None) or "hbm"
    if header is not None and header.used_bytes is None:
        when = "at compile time" if header.at_compile else ""
        return f"ran out of {space.upper()} {when}".rstrip() + ": the text prints no figure", figures
    if header is not None:
        figures = {"used_bytes": header.used_bytes, "capacity_bytes": header.capacity_bytes,
                   "exceeded_bytes": header.exceeded_bytes}
        when = "at compile time" if header.at_compile else "at run time"
        return (f"ran out of {space.upper()} {when}: {format_bytes(header.used_bytes)} used of "
                f"{format_bytes(header.capacity_bytes)} (over by {format_bytes(header.exceeded_bytes)})"), figures
    if report.total is not None and report.total.total_bytes is not None:
        figures = {"used_bytes": report.total.total_bytes}
        return f"ran out of {space.upper()}: total usage {format_bytes(report.total.total_bytes)}", figures
    if report.reservation is not None:
        r = report.reservation
        figures = {"requested_bytes": r.requested_bytes, "free_bytes": r.free_bytes,
                   "capacity_bytes": r.capacity_bytes}
        free = f", {format_bytes(r.free_bytes)} free" if r.free_bytes is not None else ""
        return f"ran out of HBM: reserving {format_bytes(r.requested_bytes)} for the program failed{free}", figures
    if report.allocation_failure is not None:
        a = report.allocation_failure
        figures = {"requested_bytes": a.requested_bytes, "free_bytes": a.free_bytes,
                   "largest_free_bytes": a.largest_free_bytes}
        extra = ""
        if a.free_bytes is not None:
            extra = f", {format_bytes(a.free_bytes)} free"
        if a.largest_free_bytes is not None:
            extra += f" but the largest contiguous region is {format_bytes(a.largest_free_bytes)} (fragmentation)"
        what = format_bytes(a.requested_bytes) if a.requested_bytes is not None else "a tensor"
        return f"ran out of memory: allocating {what} failed{extra}", figures
    if report.program is not None and report.program.total_bytes is not None:
        figures = {"program_bytes": report.program.total_bytes}
        return f"ran out of {space.upper()}: the program needs {format_bytes(report.program.total_bytes)}", figures
    if report.early_abort is not None:
        e = report.early_abort
        figures = {"required_bytes": e.required_bytes, "available_bytes": e.available_bytes}
        return (f"compilation aborted early: the program would need {format_bytes(e.required_bytes)}, "
                f"{format_bytes(e.available_bytes)} available"), figures
    return "ran out of memory", figures


def _remediation(report) -> Remediation:
    ranked = rank_text_fixes(report)
    if not ranked:
        return Remediation("which fix saves how much is unknown from text: " + CAPTURE_HINT, CAPTURE_COMMANDS)
    top = ranked[0]
    excess = format_bytes(report.header.exceeded_bytes) if top.enough is not None else ""
    enough = {True: f", which could cover the {excess} excess", False: f", less than the {excess} excess",
              None: ""}[top.enough]
    return Remediation(f"{top.fix}: saves at most {format_bytes(top.saves_bytes_at_most)}{enough} ({top.basis}); "
                       "to measure it: " + CAPTURE_HINT, CAPTURE_COMMANDS)


def _confidence(report) -> Confidence:
    ranked = rank_text_fixes(report)
    if not ranked:
        return Confidence(ConfidenceLevel.UNKNOWN, (CAPTURE_HINT,), {"fixes": "unknown"})
    return Confidence(ConfidenceLevel.LOW, (ranked[0].basis, "a text listing carries no buffer plan"),
                      {"fixes": "estimated from text"})


def text_section(text: TextInput, findings: list[Finding]) -> dict[str, Any]:
    reports, stats = text.oom.reports, text.oom.stats
    if text.oom.unreadable and (reports or stats):
        findings.append(Finding(
            id="memory-oom-unreadable", step=None, title=f"an out-of-memory listing in {text.name} cannot be read",
            status=Status.WARN, severity=Severity.LOW, kind=FINDING_KIND,
            message=f"left out {len(text.oom.unreadable)} listing(s): " + "; ".join(text.oom.unreadable[:3]),
            evidence={"source": text.name, "unreadable": text.oom.unreadable[:10]}))
    listings = []
    for index, report in enumerate(reports, 1):
        listing = _listing(report)
        listings.append(listing)
        headline, figures = _headline(report)
        # the title says what ran out, the message its figures (the renderers print "title: message")
        what, sep, sentence = headline.partition(": ")
        largest = [a for a in report.allocations if a.size_bytes is not None or a.shape][:TOP_OOM_ALLOCATIONS]
        if largest:
            sentence += "; largest allocations: " + ", ".join(
                (f"{format_bytes(a.size_bytes)} " if a.size_bytes is not None else "") + (a.shape or "?")
                + (f" ({a.op_name})" if a.op_name else "")
                for a in largest)
        if report.problems:
            sentence += "; the listing does not add up to its own header: " + ", ".join(
                f"{r.what} (off by {format_bytes(abs(r.difference_bytes))})" for r in report.problems)
        finding = Finding(
            id="memory-oom", step=None, title=f"{what} ({text.name}, listing {index})",
            status=Status.FAIL, severity=Severity.HIGH, kind=FINDING_KIND,
            message=sentence.removeprefix("; ") or "the listing prints no figures",
            evidence={"source": text.name, "listing": index, **figures,
                      "largest_allocations": [_allocation_row(a) for a in largest],
                      "reconciliation_problems": [r.what for r in report.problems], **_fixes(report)},
            remediation=_remediation(report))
        finding.confidence = _confidence(report)
        findings.append(finding)
    compiled = [dict(s.fields, device_bytes=s.device_bytes, host_bytes=s.host_bytes) for s in stats]
    for index, s in enumerate(stats, 1):
        findings.append(Finding(
            id="memory-analysis", step=None, title=f"compiled program's memory ({text.name}, {index})",
            status=Status.PASS, severity=Severity.INFO, kind=FINDING_KIND,
            message=f"memory_analysis(): the program needs {format_bytes(s.device_bytes)} of device memory "
                    "(arguments + outputs - aliased + temporaries + code); which fix saves how much is unknown "
                    "from text: " + CAPTURE_HINT,
            evidence={"source": text.name, "device_bytes": s.device_bytes, "fixes": "unknown", **s.fields}))
    return {"source": text.name, "listings": listings, "compiled_stats": compiled,
            "unreadable": text.oom.unreadable[:10]}
