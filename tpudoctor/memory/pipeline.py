"""``tpudoctor memory``'s analysis: what fills memory at the peak, what to shrink and how much each fix saves.

    from tpudoctor.memory.pipeline import MemoryOptions, analyze
    report = analyze(["logdir/plugins/profile/run/", "oom.log"], MemoryOptions(mesh={"data": 8}))

Inputs: ``*.xplane.pb`` captures (one file per host), profile run folders or logdirs (``<logdir>/plugins/
profile/<run>/``: the newest run's host files, ``tpudoctor.captures.capture_files``), and text (anything else; ``-`` is
stdin) holding XLA's or libtpu's out-of-memory listings or ``memory_analysis()`` output.

Per capture (host): each allocator's peak (``timeline.allocator_timelines``: bytes in use, when, step, capacity,
fragmentation) with the buffers live there (``buffers.peak_breakdown``) and a sampled timeline; the program
running at the peak (``plan_capture.plan_at``; where none ran then, the largest program, said so), its bytes by
bucket (``attribution.attribute``) and the fixes ranked by saving (``fix_rule.evaluate_rules``). Per text:
each out-of-memory listing (``oom_text.parse_oom_reports``) as a FAIL finding; text carries no buffer plan, so
what each fix would save is ``unknown`` and the finding says how to take a capture that tells.

Pod-wide: every chip's (device allocator's) peak across the hosts, their median, and the chips more than
``max(OUTLIER_MIN_FRACTION x median, OUTLIER_MADS x MAD)`` above it (``pod_table.chip_outliers``).

Data only: the report's document is rendered by ``tpudoctor.reports.memory_<format>``.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tpudoctor.errors import InputError
from tpudoctor.findings import (
    Confidence,
    ConfidenceLevel,
    Finding,
    Remediation,
    Scope,
    Severity,
    Status,
)
from tpudoctor.memory.fix_rule import FINDING_KIND
from tpudoctor.memory.oom_section import CAPTURE_COMMANDS, TextInput, text_section
from tpudoctor.memory.pod_table import HOST_ALLOCATOR, pod_section
from tpudoctor.memory.report import MemoryReport
from tpudoctor.units import format_bytes

TOP_BUFFERS = 10
"""Buffers listed per peak and per program."""
CAPTURE_SUFFIXES = (".xplane.pb", ".pb")
MAX_TEXT_BYTES = 2 << 30
"""Bytes of text one log may hold (read, or decompressed): more is refused, not read for minutes."""
MAX_GZIP_RATIO = 500
"""A gzip stream giving more than this many times its own size (past ``GZIP_BOMB_MIN_BYTES``) is a bomb: real logs
compress 5 to 50 times."""
GZIP_BOMB_MIN_BYTES = 16 << 20



@dataclasses.dataclass(frozen=True)
class MemoryOptions:
    mesh: Mapping[str, int] | None = None
    batch_size: int | None = None
    disabled_plugins: Sequence[str] = ()
    timeline_points: int = 1000
    """Points of each allocator's timeline the document carries (xprof draws 1000)."""


# --- inputs ----------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _DeviceProfile:
    """A JAX device memory profile (pprof): a local path or a ``gs://`` object."""

    location: str


@dataclasses.dataclass(frozen=True)
class _Capture:
    host: str
    location: str
    source: str
    run: str | None



def parse_mesh(text: str | None) -> dict[str, int] | None:
    """``data=8,model=4`` -> {"data": 8, "model": 4}; ValueError naming what is wrong."""
    if not text:
        return None
    mesh: dict[str, int] = {}
    for part in text.split(","):
        name, sep, size = part.strip().partition("=")
        if not sep or not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise ValueError(f"mesh axis {part.strip()!r} is not NAME=SIZE (e.g. data=8,model=4)")
        if name.strip() in mesh:
            raise ValueError(f"axis {name.strip()!r} is given twice ({name.strip()}={mesh[name.strip()]} and "
                             f"{part.strip()}): name each axis once")
        mesh[name.strip()] = int(size)
    return mesh


def _inputs(paths: Iterable[str], stdin: Callable[[], Any]) -> list[_Capture | TextInput | _DeviceProfile]:
    from tpudoctor import locations
    from tpudoctor.captures.capture_files import hostname_of, resolve
    from tpudoctor.cloud_knowledge.uri import split_user_gs_uri
    from tpudoctor.memory.device_profile import is_device_profile_name

    out: list[_Capture | TextInput | _DeviceProfile] = []
    for path in paths:
        if path == "-":
            out.append(_read_stdin(stdin()))
            continue
        if is_device_profile_name(path) and (locations.is_gcs(path) or os.path.isfile(path)):
            out.append(_DeviceProfile(path))
            continue
        if locations.is_gcs(path):
            split_user_gs_uri(path)  # names a bucket, a valid one: said before any credentials are looked up
            entry = _text_object(path)
            if entry is not None:
                if entry.size_bytes > MAX_TEXT_BYTES:
                    raise InputError(f"{path} holds more than {MAX_TEXT_BYTES >> 30} GiB of text",
                                     hint="pass the part of the log around the failure")
                out.append(read_text(path, io.BytesIO(locations.read_bytes(path))))
            else:  # a capture object, a run prefix or a logdir prefix: the profile loader's own resolution
                resolved = resolve(path)
                out += [_Capture(h.hostname, h.location, path, resolved.run) for h in resolved.hosts]
            continue
        if not os.path.exists(path):
            raise InputError(f"{path} does not exist",
                             hint="pass .xplane.pb captures, profile run folders or logdirs, or text logs ('-': stdin)")
        if os.path.isdir(path):
            resolved = resolve(path)
            out += [_Capture(h.hostname, h.location, path, resolved.run) for h in resolved.hosts]
        elif path.endswith(CAPTURE_SUFFIXES):
            out.append(_Capture(hostname_of(os.path.basename(path)), path, path, None))
        else:
            try:
                with open(path, "rb") as handle:
                    out.append(read_text(path, handle))
            except OSError as exc:
                raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return out


def _text_object(location: str):
    """The ``gs://`` object at ``location`` where it is one not named as a capture: a log (a prefix is a run or a
    logdir, None); ``InputError`` where there is neither such an object nor a prefix."""
    from tpudoctor import locations

    if location.endswith("/") or location.endswith(CAPTURE_SUFFIXES):
        return None
    entry = locations.find_object(location)
    if entry is not None:
        return entry
    files, folders = locations.list_level(location)
    if not files and not folders:
        raise InputError(f"{location}: no such object (nor a folder of captures by that name)",
                         hint="gsutil ls the bucket to see what it holds")
    return None


def _read_stdin(stream: Any) -> TextInput:
    """Standard input: its bytes (sniffed like a file's), or a text stream put in its place as lines."""
    from tpudoctor.logs.oom import read_oom_text
    from tpudoctor.logs.sources import bounded_lines

    raw = getattr(stream, "buffer", stream)
    if isinstance(raw, io.TextIOBase):  # a text stream put in place of stdin (an embedding program, a test)
        return TextInput("<stdin>", read_oom_text(bounded_lines(raw)))
    return read_text("<stdin>", raw)


def read_text(source: str, stream: Any) -> TextInput:
    """A text log's out-of-memory reports, streamed through the log layer (``tpudoctor.logs.sources``): gzip told by
    its magic bytes (a ``.gz`` name or not, stdin too), binary and empty input refused (``InputError``), the
    bytes read and decompressed capped (``MAX_TEXT_BYTES``, ``MAX_GZIP_RATIO``), lines bounded."""
    import zlib

    from tpudoctor.logs import sources
    from tpudoctor.logs.oom import OomText, read_oom_text

    caps = sources.TextCaps(MAX_TEXT_BYTES, MAX_GZIP_RATIO, GZIP_BOMB_MIN_BYTES,
                            hint="pass the part of the log around the failure, e.g. grep -B 20 -A 400 "
                                 "'Ran out of memory\\|Attempting to' LOG > oom.log")
    compressed = False
    try:
        handle, compressed = sources.capped_stream(stream, source, caps)
        sniffed = sources.sniff(handle)
        if sniffed.state == "binary":
            raise InputError(f"{source} is binary: it {sniffed.reason.removesuffix(': not a text log')}, not a "
                             "text log", hint="pass the job's log (text, or .gz), a capture (.xplane.pb) or a device "
                                              "memory profile (.prof)")
        if sniffed.state == "empty":  # judged with the texts that hold no report
            return TextInput(source, OomText())
        if sniffed.state != "text":
            raise InputError(f"{source} {sniffed.reason}")
        return TextInput(source, read_oom_text(sources.decoded_lines(handle)))
    except (OSError, EOFError, zlib.error) as exc:
        what = "a readable gzip file" if compressed else "readable"
        raise InputError(f"{source} is not {what}: {exc}") from None


# --- one capture -----------------------------------------------------------------------------------------------


def _top_buffers_of_peak(timeline) -> list[dict[str, Any]]:
    from tpudoctor.memory.buffers import peak_breakdown

    breakdown = peak_breakdown(timeline)
    rows = []
    for row in breakdown.top.head(TOP_BUFFERS).itertuples(index=False):
        rows.append({"tf_op": str(row.tf_op), "shape": str(row.shape), "dtype": str(row.dtype),
                     "region_type": str(row.region_type), "size_bytes": int(row.size_bytes), "count": int(row.count),
                     "total_bytes": int(row.total_bytes), "share_of_peak": round(float(row.share_of_peak), 4)})
    return rows


def _timeline_points(timeline, points: int) -> dict[str, list]:
    sampled = timeline.sampled(points)
    return {"time_ms": [round(float(t), 6) for t in sampled["time_ms"]],
            "bytes_in_use": [int(b) for b in sampled["bytes_in_use"]],
            "peak_time_ms": round(timeline.peak.time_ms, 6), "points": len(sampled), "events": len(timeline)}


def _plan_at_peak(plans, runs, absolute_ps: int, allocator: str):
    from tpudoctor.memory.plan_capture import plan_at

    planes = {r.plane for r in runs}
    own = [p for p in planes if p.rsplit(":", 1)[-1] == allocator and p.startswith("/device:")]
    if own:
        plan = plan_at(plans, runs, absolute_ps, plane=own[0])
        if plan is not None:
            return plan
    return plan_at(plans, runs, absolute_ps)


def _share_row(share) -> dict[str, Any]:
    return {"bucket": share.bucket, "bytes": int(share.bytes), "instruction": share.instruction,
            "shape": share.shape, "dtype": share.dtype, "op_name": share.op_name, "source": share.source}


def _fix_row(finding: Finding) -> dict[str, Any]:
    e = finding.evidence
    return {"id": finding.id, "status": finding.status.value, "title": finding.title,
            "saving_bytes": e.get("saving_bytes"), "saving_percent_of_peak": e.get("saving_percent_of_peak"),
            "confidence": e.get("confidence"), "confidence_why": e.get("confidence_why"),
            "keeps_numerics": e.get("keeps_numerics")}


def _program(plan, why: str, allocators: list[str], peak, options: MemoryOptions, rules, host: str,
             findings: list[Finding]) -> dict[str, Any]:
    from tpudoctor.memory.fix_rule import MemoryPlanInput, evaluate_rules

    at_peak = peak is not None
    subject = MemoryPlanInput(plan, mesh=options.mesh, batch_size=options.batch_size,
                              capacity_bytes=peak.capacity_bytes if at_peak and peak.capacity_bytes else None,
                              in_use_bytes=peak.bytes_in_use if at_peak else None)
    attribution = subject.attribution
    results = evaluate_rules(subject, rules)
    fired = [f for f in results if f.status in (Status.WARN, Status.FAIL, Status.ERROR)]
    scope = Scope.of(hosts=[host], chips=allocators)
    for finding in fired:
        finding.scope = scope
        finding.evidence["host"] = host
        findings.append(finding)
    fixes = [f for f in fired if f.status is not Status.ERROR]
    if not fixes:
        findings.append(Finding(
            id="memory-no-fix", step=None, title=f"no fix saves much of {plan.event_name}'s peak",
            status=Status.PASS, severity=Severity.INFO, kind=FINDING_KIND, scope=scope,
            message=f"no rule finds a fix worth {format_bytes(0.02 * plan.peak_bytes)} (2% of the "
                    f"{format_bytes(plan.peak_bytes)} peak of {plan.event_name}) on {host}",
            evidence={"host": host, "program": plan.event_name, "peak_bytes": plan.peak_bytes}))
    top = sorted(attribution.shares, key=lambda s: -s.bytes)[:TOP_BUFFERS]
    return {"program": plan.event_name, "module": plan.module_name, "program_id": str(plan.program_id)
            if plan.program_id is not None else None, "why": why, "allocators": allocators,
            "peak_bytes": plan.peak_bytes, "attribution": attribution.to_dict(),
            "top_buffers": [_share_row(s) for s in top], "fixes": [_fix_row(f) for f in fixes],
            "rules_run": len(results)}


def _capture(capture: _Capture, options: MemoryOptions, rules, findings: list[Finding]) -> dict[str, Any]:
    """One host's section; a ``gs://`` capture is read from a temporary local copy (removed after)."""
    from tpudoctor import locations

    if not locations.is_gcs(capture.location):
        return _capture_file(capture, capture.location, options, rules, findings)
    with tempfile.TemporaryDirectory(prefix="tpudoctor-memory-") as folder:  # the readers seek in a file
        path = locations.local_copy(capture.location, folder)
        try:
            return _capture_file(capture, path, options, rules, findings)
        except InputError as exc:  # the user named the object, not the copy (which is gone once this returns)
            raise InputError(exc.message.replace(path, capture.location),
                             hint=exc.hint.replace(path, capture.location) if exc.hint else None) from None


def _capture_file(capture: _Capture, path: str, options: MemoryOptions, rules, findings: list[Finding]
                  ) -> dict[str, Any]:
    from tpudoctor.captures.memory_capture import read_memory_capture
    from tpudoctor.memory.plan_capture import largest_plan, plans_of
    from tpudoctor.memory.timeline import allocator_timelines

    location = capture.location
    if os.path.getsize(path) == 0:
        raise InputError(f"{location} is empty (0 bytes): not a capture",
                         hint="the profiler may have been stopped before it wrote; capture again")
    read = read_memory_capture(path)  # the one read of the capture: events, programs' HloProtos, runs
    events = read.events
    timelines = allocator_timelines(events)
    plan_errors: list[str] = [read.program_error] if read.program_error is not None else []
    plans, runs = {}, []
    if read.program_error is None:
        try:
            plans, runs = plans_of(read.hlo_protos, errors=plan_errors), read.runs
        except Exception as exc:  # noqa: BLE001 - the events read; programs that do not decode are a note
            plan_errors.append(f"the capture's programs could not be read: {exc}")
    notes = list(events.warnings) + plan_errors
    if not events.has_host_plane:
        notes.append("the capture has no host plane (/host:CPU): no allocator events")
    elif not timelines:
        notes.append("no allocator memory events (MemoryAllocation/MemoryDeallocation) in the capture: the "
                     "runtime did not record them (JAX on CPU does not)")
    if not plans:
        notes.append("no compiled program's buffer plan (Hlo Proto on /host:metadata) in the capture: which fix "
                     "saves how much is unknown")
    allocators: list[dict[str, Any]] = []
    chosen: dict[str, tuple[Any, str, list[str], Any]] = {}
    for allocator, timeline in timelines.items():
        peak = timeline.peak
        is_chip = not HOST_ALLOCATOR.search(allocator)
        plan = _plan_at_peak(plans, runs, events.time_origin_ns * 1000 + peak.time_ps, allocator) if plans else None
        how = "running at the peak" if plan is not None else None
        if plan is None and plans and is_chip:
            plan = largest_plan(plans)
            how = "the largest program (none of the capture's program runs covers the peak's time)"
        row = {"allocator": allocator, "chip": is_chip, "peak_bytes": peak.bytes_in_use,
               "heap_bytes": peak.heap_bytes, "stack_bytes": peak.stack_bytes, "free_bytes": peak.free_bytes,
               "capacity_bytes": peak.capacity_bytes, "fragmentation": round(peak.fragmentation, 6),
               "peak_share_of_capacity": peak.bytes_in_use / peak.capacity_bytes if peak.capacity_bytes else None,
               "time_ms": round(peak.time_ms, 6), "step": peak.step, "lifetime_peak_bytes": peak.lifetime_peak_bytes,
               "events": len(timeline), "unmatched_frees": timeline.unmatched_frees,
               "program": plan.event_name if plan is not None else None, "program_how": how,
               "peak_buffers": _top_buffers_of_peak(timeline),
               "timeline": _timeline_points(timeline, options.timeline_points)}
        allocators.append(row)
        if plan is not None:  # one analysis per program: the figures at the first peak it was running at
            entry = chosen.setdefault(plan.event_name, [plan, {}, [], None])
            entry[1].setdefault(how, []).append(allocator)
            entry[2].append(allocator)
            if how == "running at the peak" and entry[3] is None:
                entry[3] = peak
    if not chosen and plans:  # no allocator events (JAX on CPU): the largest program is the one to judge
        chosen["largest"] = [largest_plan(plans), {"the largest program (the capture has no allocator events to "
                                                   "say which ran at the peak)": []}, [], None]
    programs = [_program(plan, "; ".join(how + (f" of allocator(s) {', '.join(allocs)}" if allocs else "")
                                         for how, allocs in hows.items()),
                         allocs, peak, options, rules, capture.host, findings)
                for plan, hows, allocs, peak in chosen.values()]
    if not timelines and not plans:
        findings.append(Finding(
            id="memory-nothing-to-judge", step=None, title=f"nothing to judge in {capture.host}", status=Status.WARN,
            severity=Severity.LOW, kind=FINDING_KIND, scope=Scope.of(hosts=[capture.host]),
            message=f"{location} has neither allocator memory events nor a compiled program's buffer plan",
            evidence={"host": capture.host, "source": location},
            remediation=Remediation("capture the step with JAX or TensorFlow on XLA (the profiler records the "
                                    "programs' buffer plans and the allocators' events)", CAPTURE_COMMANDS)))
    elif not plans:
        finding = Finding(
            id="memory-fixes-unknown", step=None, title=f"which fix saves how much on {capture.host}: unknown",
            status=Status.PASS, severity=Severity.INFO, kind=FINDING_KIND, scope=Scope.of(hosts=[capture.host]),
            message=f"{location} shows the allocators' peaks but holds no buffer plan, so the fix rules cannot run; "
                    "a JAX (or TensorFlow on XLA) capture of the step records one",
            evidence={"host": capture.host, "source": location, "fixes": "unknown"})
        finding.confidence = Confidence(ConfidenceLevel.UNKNOWN, ("no buffer plan in the capture",))
        findings.append(finding)
    return {"host": capture.host, "source": location, "run": capture.run, "allocators": allocators,
            "programs": programs, "plans": len(plans), "program_runs": len(runs), "notes": notes}


def _device_profile(item: _DeviceProfile, findings: list[Finding]) -> dict[str, Any]:
    from tpudoctor import locations
    from tpudoctor.memory.device_profile import device_profile_from_bytes
    from tpudoctor.memory.profile_section import profile_section

    profile = device_profile_from_bytes(locations.read_bytes(item.location), source=item.location)
    return profile_section(profile, findings)


# --- the analysis ----------------------------------------------------------------------------------------------


def analyze(paths: Sequence[str], options: MemoryOptions | None = None, *,
            progress: Callable[[str], None] | None = None, stdin: Callable[[], Any] | None = None) -> MemoryReport:
    """The memory report of ``paths`` (captures, run folders, logdirs, texts; ``-``: stdin). ``InputError``
    for a path that does not exist, a capture that does not read, or when no input holds anything to judge."""
    from tpudoctor import __version__
    from tpudoctor.families import load_rules

    options = options or MemoryOptions()
    started = time.monotonic()
    say = progress or (lambda what: None)
    if not paths:
        raise InputError("no input given", hint="tpudoctor memory PATH... (.xplane.pb, a profile run folder or "
                                                "logdir, or a log with an out-of-memory report; '-': stdin)")
    inputs = _inputs(paths, stdin or (lambda: sys.stdin))
    rules = load_rules("memory-rules", disabled=tuple(options.disabled_plugins or ())) if any(
        isinstance(i, _Capture) for i in inputs) else None
    findings: list[Finding] = []
    hosts: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    profiles: list[dict[str, Any]] = []
    for n, item in enumerate(inputs, 1):
        if isinstance(item, _DeviceProfile):
            say(f"device memory profile {n}/{len(inputs)}: {item.location}")
            profiles.append(_device_profile(item, findings))
        elif isinstance(item, _Capture):
            say(f"capture {n}/{len(inputs)}: {item.host}")
            hosts.append(_capture(item, options, rules, findings))
        else:
            say(f"text {n}/{len(inputs)}: {item.name}")
            texts.append(text_section(item, findings))
    empty = [t["source"] for t in texts if not t["listings"] and not t["compiled_stats"]]
    if empty and not hosts and not profiles and len(empty) == len(texts):
        unreadable = [f"{t['source']} {line}" if len(texts) > 1 else line for t in texts for line in t["unreadable"]]
        if unreadable:
            raise InputError(f"{', '.join(empty)}: its out-of-memory listing cannot be read ({'; '.join(unreadable[:3])})",
                             hint="pass the log as the job printed it")
        raise InputError(f"{', '.join(empty)}: no out-of-memory report (Ran out of memory, Total hbm usage, "
                         "Largest program allocations, Attempting to allocate/reserve) nor memory_analysis() output",
                         hint="pass the log of the run that failed, or a capture (.xplane.pb) of its step")
    for source in empty:
        findings.append(Finding(
            id="memory-no-oom-report", step=None, title=f"no out-of-memory report in {source}", status=Status.WARN,
            severity=Severity.LOW, kind=FINDING_KIND, evidence={"source": source},
            message=f"{source} holds no out-of-memory report nor memory_analysis() output: nothing to judge in it"))
    say("comparing the chips")
    pod = pod_section(hosts, findings)
    return MemoryReport(inputs=list(paths), hosts=hosts, texts=texts, profiles=profiles, pod=pod,
                        findings=findings,
                        options={"mesh": dict(options.mesh) if options.mesh else None,
                                 "batch_size": options.batch_size},
                        duration_s=time.monotonic() - started, tool_version=__version__)
