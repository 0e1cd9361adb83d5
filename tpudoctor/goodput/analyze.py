"""The goodput pipeline: read sources -> events -> timeline -> account -> rules -> one document.

>>> document = analyze_paths(["train.log"])
>>> document["goodput"]["ettr"], document["goodput"]["badput"]["PROGRAM_STARTUP"]["percent"]

The document is plain data (``kind: goodput``, ``schema_version``) that every renderer formats and
``tpudoctor compare`` reads back.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gzip
import io
import itertools
import os
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tpudoctor.errors import InputError
from tpudoctor.goodput import inferred
from tpudoctor.goodput.account import account, clock_tick_s
from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.lines import read_event_blocks
from tpudoctor.goodput.readers import READERS, Event, LineReader
from tpudoctor.goodput.timeline import Timeline
from tpudoctor.logs import sources
from tpudoctor.logs.buffer import LineBuffer
from tpudoctor.logs.clock import UTC, Clock, Zone, iso_utc

if TYPE_CHECKING:
    from tpudoctor.findings import Finding
    from tpudoctor.goodput.rule import GoodputRule

SCHEMA_VERSION = "1.0"
DOCUMENT_KIND = "goodput"
ProgressFn = Callable[[str], None]


@dataclasses.dataclass
class SourceInfo:
    """What reading one log source found (the document's ``sources``)."""

    name: str
    lines: int = 0
    non_utf8_lines: int = 0
    problem: str | None = None
    first_t: float | None = None
    last_t: float | None = None
    timed_events: int = 0
    year_source: str | None = None
    clock_jumps: list = dataclasses.field(default_factory=list)
    """Where its clock went back (line order), each with by how much."""
    time_of_day_only: bool = False
    """Its only times were a step line's time-of-day column (no date): a clock for the window, with no date."""
    by_worker: dict = dataclasses.field(default_factory=dict)
    """Labelled worker -> [first, last] time of its lines."""
    inferred: dict | None = None
    """What was inferred from the log itself where no known form gave a step (clock, step template, MLLOG)."""
    cut: str | None = None
    """Why it ended before its end (a .gz cut short): what came before the cut was read."""
    clock_outliers: list = dataclasses.field(default_factory=list)
    """Single lines whose clock ran ahead of both neighbours (set aside, not used as the wall's time)."""
    zone_skews: list = dataclasses.field(default_factory=list)
    """Zoned lines (XPK's UTC) and the zoneless lines beside them out of order by hours."""

    def to_dict(self) -> dict:
        return {"source": self.name, "lines": self.lines, "timed_events": self.timed_events,
                "non_utf8_lines": self.non_utf8_lines, "problem": self.problem, "year_from": self.year_source,
                "clock_jumps": len(self.clock_jumps), **({"cut": self.cut} if self.cut else {})}


def text_blocks(binary: Any, info: SourceInfo) -> Iterator[bytes]:
    """One source as blocks of whole lines (an overlong line cut: no step line is that long); ``info.problem``
    says why a binary, empty or unreadable source gave none, ``info.non_utf8_lines`` counts lines read as U+FFFD."""
    handle = sources.buffered(binary)
    sniffed = sources.sniff(handle)
    if sniffed.state != "text":
        info.problem = "empty" if sniffed.state == "empty" else \
            (f"binary, {sniffed.reason}" if sniffed.state == "binary" else sniffed.reason)
        return
    try:
        for block in sources.byte_blocks(handle):
            if not block.isascii() and not _utf8(block):  # ASCII (most logs) needs no decoding to be told
                info.non_utf8_lines += sum(1 for line in block.split(b"\n") if not _utf8(line))
            yield block
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        info.problem = f"stopped reading: {exc}"
        return
    info.cut = getattr(binary, "cut", None)


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def readers_for(step_pattern: Any = None) -> tuple[LineReader, ...]:
    return READERS + ((step_pattern,) if step_pattern is not None else ())


def analyze_paths(paths: Sequence[str], *, step_pattern: LineReader | None = None, year: int | None = None,
                  tz: Zone = UTC, min_ettr: float | None = None, on_progress: ProgressFn | None = None,
                  disabled_plugins: Collection[str] = ()) -> dict[str, Any]:
    """Read log files or folders of them (``-``: standard input) and account for their time; the rules are the
    registered ones less ``disabled_plugins`` (the run's ``disable_plugins`` setting)."""
    timeline = Timeline()
    infos: list[SourceInfo] = []
    readers = readers_for(step_pattern)
    expanded, repeats = _distinct([p for path in paths for p in (sources.expand(path) or [path])])
    for path in expanded:
        name = "<stdin>" if path == "-" else path
        info = SourceInfo(name)
        infos.append(info)
        if on_progress:
            on_progress(f"reading {name}")
        handle = sources.open_binary(path)
        if path == "-":  # standard input is read once: keep a copy for the inference pass
            handle = _KeptStdin(handle)
        try:
            stats: dict[str, Any] = {}
            clock = Clock(year, tz=tz)
            known = read_event_blocks(text_blocks(handle, info), name, clock=clock, readers=readers, stats=stats)
            held = _held_until_a_step(known, timeline, name)
            if held is not None:  # the known forms found no step: infer the structure from the log itself
                # the year the known forms read its glog dates in, so that both readings put a line at one time
                timeline.feed(_with_inferred(held, path, name, stats, year if year is not None else clock.year,
                                             kept=handle.kept() if path == "-" else None), name)
            _fill(info, stats)
        finally:
            if isinstance(handle, _KeptStdin):
                handle.discard()
            elif path != "-":
                handle.close()
    problems = [i for i in infos if i.problem]
    if problems and len(problems) == len(infos):
        detail = "; ".join(f"{i.name} is {i.problem}" for i in problems)
        raise InputError(f"nothing to read: {detail}",
                         hint="give the job's text log (a file, '-' for stdin, or --tpu NAME for Cloud Logging)")
    cuts = [f"{i.name} {i.cut}: read up to the cut" for i in infos if i.cut]
    return build_document(timeline, infos, min_ettr=min_ettr, by_worker=_by_worker(infos),
                          disabled_plugins=disabled_plugins, tz=tz, notes=repeats + cuts)


def _distinct(paths: list[str]) -> tuple[list[str], list[str]]:
    """Each log once: a path given again (the same file by its real path, or a file with the same bytes as one
    before it) would be read as another attempt of the job; standard input can be read only once. The notes say
    what was left out."""
    kept: list[str] = []
    notes: list[str] = []
    seen: dict[str, str] = {}
    by_size: dict[int, list[str]] = {}
    for path in paths:
        if path == "-":
            key = "-"
        else:
            try:
                key, size = os.path.realpath(path), os.path.getsize(path)
            except OSError:
                kept.append(path)  # opening it says what is wrong
                continue
        if key in seen:
            notes.append(f"{'<stdin>' if path == '-' else path} was given more than once: read once")
            continue
        if key != "-":
            twin = next((other for other in by_size.get(size, []) if _same_bytes(path, other)), None)
            if twin is not None:
                notes.append(f"{path} holds the same bytes as {twin}: read once (a copy is not another attempt)")
                continue
            by_size.setdefault(size, []).append(path)
        seen[key] = path
        kept.append(path)
    return kept, notes


def _same_bytes(a: str, b: str) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            block_a, block_b = fa.read(1 << 20), fb.read(1 << 20)
            if block_a != block_b:
                return False
            if not block_a:
                return True


def _held_until_a_step(events: Iterable[Event], timeline: Timeline, name: str) -> list[Event] | None:
    """Feed the timeline once a step line is seen (everything before it first); the events held when none is."""
    held: list[Event] = []
    it = iter(events)
    for event in it:
        held.append(event)
        if event.kind is Kind.STEP:
            timeline.feed(itertools.chain(held, it), name)
            return None
    return held


class _KeptStdin(io.RawIOBase):
    """Standard input read through, its bytes kept (in memory up to 32 MiB, then a temporary file; none past
    ``KEEP_BYTES``) so that a log no known form reads can be read again for inference."""

    KEEP_BYTES = 1 << 30

    def __init__(self, stream: Any):
        super().__init__()
        self._stream = stream
        self._copy = tempfile.SpooledTemporaryFile(max_size=32 << 20)  # noqa: SIM115 - closed in discard()
        self._kept = 0
        self.whole = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._stream.read(len(buffer))
        if not data:
            return 0
        buffer[:len(data)] = data
        if self._kept + len(data) <= self.KEEP_BYTES:
            self._copy.write(data)
            self._kept += len(data)
        else:
            self.whole = False
        return len(data)

    def kept(self) -> Any:
        """The kept bytes from the start; None when stdin ran past ``KEEP_BYTES``."""
        if not self.whole:
            return None
        self._copy.seek(0)
        return self._copy

    def discard(self) -> None:
        """Drop the copy (``close`` does not: the buffer read through closes this when it goes)."""
        self._copy.close()


def _with_inferred(held: list[Event], path: str, name: str, stats: dict[str, Any], year: int | None,
                   kept: Any = None) -> list[Event]:
    """The known forms' events with the inferred clock, steps and MLLOG timeline merged in line order
    (standard input: from ``kept``, the copy of what was read)."""
    if path == "-" and kept is None:
        return held
    handle = kept if path == "-" else sources.open_binary(path)
    try:
        lines = _whole_log(handle)
    except (OSError, EOFError, gzip.BadGzipFile):
        return held
    finally:
        handle.close()
    if lines is None:
        return held
    found = inferred.infer(lines, name, year=year)
    if found is None:
        return held
    events, what = found
    stats["inferred"] = what
    if what["first_t"] is not None:
        stats["first_t"] = what["first_t"] if stats.get("first_t") is None else min(stats["first_t"], what["first_t"])
        stats["last_t"] = what["last_t"] if stats.get("last_t") is None else max(stats["last_t"], what["last_t"])
    if what["relative"] or what["mllog"]:  # the one clock of the log (MLLOG's time_ms, a counter since start)
        stats["first_t"], stats["last_t"] = what["first_t"], what["last_t"]
    return sorted(held + events, key=lambda e: (e.line_no or 0) if e.kind is not Kind.START else -1)


def _whole_log(handle: Any) -> Sequence[str] | None:
    """A log's lines for the inference pass: its bytes held whole and split by numpy (a buffer read a column at a
    time); lines split one by one where carriage returns or overlong lines need it; None past ``MAX_LINES``."""
    data = handle.read(inferred.MAX_BYTES + 1)
    if len(data) > inferred.MAX_BYTES:
        return None
    buffer = LineBuffer.of(data)
    if buffer is not None:
        newlines = len(buffer) - (len(buffer) > 0 and not data.endswith(b"\n"))
        return buffer if newlines <= inferred.MAX_LINES else None
    if len(data) > inferred.LIST_MAX_BYTES or data.count(b"\n") > inferred.LIST_MAX_LINES:
        return None
    lines: list[str] = []
    for block in sources.byte_blocks(io.BufferedReader(io.BytesIO(data))):  # type: ignore[arg-type]
        lines.extend(sources.split_lines(block))
    return lines if len(lines) <= inferred.LIST_MAX_LINES else None


def analyze_events(batches: Iterable[tuple[str, Iterable[Event], dict[str, Any]]], *,
                   min_ettr: float | None = None, extra: dict[str, Any] | None = None,
                   disabled_plugins: Collection[str] = (), tz: Zone = UTC) -> dict[str, Any]:
    """Account for pre-read events (Cloud Logging entries), one ``(source, events, stats)`` per source."""
    timeline = Timeline()
    infos = []
    for name, events, stats in batches:
        info = SourceInfo(name)
        timeline.feed(events, name)
        _fill(info, stats)
        infos.append(info)
    return build_document(timeline, infos, min_ettr=min_ettr, by_worker=_by_worker(infos), extra=extra,
                          disabled_plugins=disabled_plugins, tz=tz)


def _fill(info: SourceInfo, stats: dict[str, Any]) -> None:
    info.lines = stats.get("lines", 0)
    info.timed_events = stats.get("timed_events", 0)
    info.first_t, info.last_t = stats.get("first_t"), stats.get("last_t")
    info.year_source = stats.get("year_source")
    info.time_of_day_only = bool(stats.get("time_of_day_only"))
    info.inferred = stats.get("inferred")
    info.clock_jumps = list(stats.get("clock_jumps") or [])
    info.by_worker = stats.get("by_worker") or {}
    info.clock_outliers = list(stats.get("clock_outliers") or [])
    info.zone_skews = list(stats.get("zone_skews") or [])


def _by_worker(infos: list[SourceInfo]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for info in infos:
        for worker, (a, b) in info.by_worker.items():
            span = out.setdefault(worker, [a, b])
            span[0], span[1] = min(span[0], a), max(span[1], b)
    return out


def build_document(timeline: Timeline, infos: list[SourceInfo], *, min_ettr: float | None = None,
                   by_worker: dict[str, list[float]] | None = None,
                   extra: dict[str, Any] | None = None, disabled_plugins: Collection[str] = (),
                   tz: Zone = UTC, notes: Sequence[str] = ()) -> dict[str, Any]:
    last_by_source = {i.name: i.last_t for i in infos}
    for worker, (_a, b) in (by_worker or {}).items():
        last_by_source.setdefault(f"*{worker}", b)
    timeline.finish(last_by_source)
    primary = timeline.primary()
    wall_start = wall_end = None
    if primary is not None:
        if primary.worker is not None and by_worker and primary.worker in by_worker:
            wall_start, wall_end = by_worker[primary.worker]
        else:
            info = next((i for i in infos if i.name == primary.source), None)
            if info is not None:
                wall_start, wall_end = info.first_t, info.last_t
        if wall_start is None and primary.first_t is not None:  # dates in events (XPK), or a time of day only
            wall_start, wall_end = primary.first_t, primary.last_t
    lead = next((i for i in infos if primary is not None and i.name == primary.source), None)
    figures = account(timeline, wall_start=wall_start, wall_end=wall_end,
                      clock_jumps=lead.clock_jumps if lead is not None and primary.worker is None else None,
                      clock_outliers=[o for i in infos for o in i.clock_outliers],
                      zone_skews=[z for i in infos for z in i.zone_skews], timed_run_s=_mlperf_run_s(lead))
    figures["notes"] = list(notes) + figures["notes"]
    confidence = figures["consistency"]["confidence"]
    for info in infos:
        if info.cut:  # the figures end where the file does, not where the job did
            confidence["reasons"].append(f"{info.name} {info.cut}: the figures end at the cut")
            confidence["level"] = "medium" if confidence["level"] == "high" else confidence["level"]
    dateless = primary is not None and wall_start is not None and lead is not None and lead.time_of_day_only
    if dateless:  # the process's own clock without a date: it times the window its lines cover (issue 41)
        figures["clock"] = {"kind": "time of day", "date": None,
                            "why": "the step lines carry the process's time of day (torch_xla's Time=) and no "
                                   "other clock: the wall time is the window from the first to the last such line"}
        figures["notes"].append("the clock is a time of day with no date: the wall time is the window from the first "
                                "to the last clocked line (midnight rollovers counted); what ran before the first "
                                "clocked line (start-up, compilation) is on no line")
        confidence["level"] = "medium" if confidence["level"] == "high" else confidence["level"]
        confidence["reasons"].append("a time of day with no date: the window before the first step line is unseen")
        _ettr_interval(figures, clock_tick_s(primary.runs) or None)
    relative = _note_inferred(lead, figures) or dateless
    from tpudoctor import __version__

    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": DOCUMENT_KIND,
        "tool": {"name": "tpudoctor", "version": __version__},
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "sources": [i.to_dict() for i in infos],
        "lead_worker": _stream_name(primary) if primary is not None else None,
        "wall_start": None if relative else iso_utc(wall_start),
        "wall_end": None if relative else iso_utc(wall_end),
        "clock": {"zone": f"times without a zone are read as {tz.name}",
                  "year_from": sorted({i.year_source for i in infos if i.year_source})},
        "frameworks": dict(sorted(((k, v) for k, v in (primary.frameworks.items() if primary else [])),
                                  key=lambda kv: -kv[1])),
        "workers": [_worker_row(s) for s in sorted(timeline.streams.values(), key=lambda s: -s.steps)][:64],
        "goodput": figures,
        "gate": None,
        "instrumented": None,
    }
    if extra:
        document.update(extra)
    from tpudoctor.families import load_rules

    rules = load_rules("goodput-rules", disabled=disabled_plugins)
    document["findings"] = [f.to_dict() for f in evaluate_rules(document, rules)]
    document["gate"] = gate(figures, min_ettr)
    return document


def _ettr_interval(figures: dict[str, Any], resolution_s: float | None) -> None:
    """The ETTR's bounds from the clock's resolution: the wall's two ends and each run's first and last step line
    may each be off by one tick."""
    wall, productive = figures.get("wall_s"), figures.get("productive_s")
    if resolution_s is None or not wall or productive is None:
        return
    runs = max(len(figures.get("runs") or []), 1)
    slack = 2 * runs * resolution_s
    low = max(productive - slack, 0.0) / (wall + 2 * resolution_s)
    high = min((productive + slack) / max(wall - 2 * resolution_s, 1e-9), 1.0)
    figures["ettr_interval"] = [round(low, 4), round(high, 4)]
    figures["notes"].append(f"the clock ticks in {resolution_s:g} s: the ETTR lies in [{low:.3f}, {high:.3f}]")


def _mlperf_run_s(lead: SourceInfo | None) -> float | None:
    run_ms = ((lead.inferred or {}).get("mllog") or {}).get("run_ms") if lead is not None else None
    return run_ms / 1000.0 if run_ms is not None else None


def _note_inferred(lead: SourceInfo | None, figures: dict[str, Any]) -> bool:
    """Say which clock and which step lines were inferred, and why; True when the clock is relative (no date)."""
    what = lead.inferred if lead is not None else None
    if not what:
        return False
    figures["inferred"] = {"clock": what["clock"], "steps_from": what["steps_from"],
                           "clock_resolution_s": what.get("resolution_s"), "durations": what.get("durations")}
    durations = what.get("durations")
    if durations and durations["agree"] < durations["checked"]:
        worst = durations["worst"]
        figures["notes"].append(f"the step times the lines print disagree with the clock's gaps in "
                                f"{durations['checked'] - durations['agree']} of {durations['checked']} steps (worst: "
                                f"step {worst['step']}, {worst['off_s']} s apart): one of them is wrong")
        confidence = figures["consistency"]["confidence"]
        confidence["level"] = "medium" if confidence["level"] == "high" else confidence["level"]
        confidence["reasons"].append("printed step times disagree with the clock's gaps")
    _ettr_interval(figures, what.get("resolution_s"))
    figures["notes"].append(f"no known step form in the log; read from the log itself: {what['clock']}; "
                            f"steps: {what['steps_from']}")
    if what.get("mllog"):
        figures["mllog"] = what["mllog"]
    if what["relative"]:
        figures["notes"].append("the clock counts time since the process started and carries no date: the wall "
                                "time and ETTR are measured, the date is unknown")
    return bool(what["relative"])


def gate(figures: dict[str, Any], min_ettr: float | None) -> dict[str, Any] | None:
    """``--min-ettr``: passed, failed, or not judged (and why) when the log has no ETTR."""
    if min_ettr is None:
        return None
    ettr = figures.get("ettr")
    if ettr is None:
        return {"min_ettr": min_ettr, "ettr": None, "verdict": "not_judged",
                "reason": (figures.get("nulls") or {}).get("ettr", "no ETTR")}
    unsupported = (figures.get("consistency") or {}).get("unsupported")
    if unsupported:  # the figure exists but the log contradicts itself: no verdict rests on it
        return {"min_ettr": min_ettr, "ettr": ettr, "verdict": "not_judged",
                "reason": f"the log cannot support ETTR {ettr:.3f}: {unsupported}"}
    return {"min_ettr": min_ettr, "ettr": ettr, "verdict": "passed" if ettr >= min_ettr else "failed",
            "reason": f"ETTR {ettr:.3f} {'>=' if ettr >= min_ettr else '<'} {min_ettr:.3f}"}


def _stream_name(stream: Any) -> str:
    return stream.worker if stream.worker is not None else stream.source


def _worker_row(stream: Any) -> dict[str, Any]:
    last = stream.runs[-1] if stream.runs else None
    return {"worker": _stream_name(stream), "step_lines": stream.steps, "runs": len(stream.runs),
            "last_step": max((r.last_step for r in stream.runs if r.last_step is not None), default=None),
            "out_of_order_steps": stream.out_of_order, "last_time": iso_utc(stream.last_t),
            "end_reason": last.end_reason if last else None}


MEASURABLE_RULE_ID = "goodput-measurable"
"""The rule that judges whether the log supports the figures: the one rule still run when it does not."""


def evaluate_rules(document: Mapping[str, Any], rules: Mapping[str, type[GoodputRule]]
                   ) -> list[Finding]:
    """Every rule on the document's ``goodput`` figures: fired ones first (worst first), then passes."""
    from tpudoctor.goodput.rules._common import skipped
    from tpudoctor.rule import evaluate_rule

    goodput = document["goodput"]
    unsupported = (goodput.get("consistency") or {}).get("unsupported")
    findings = [skipped(cls, f"not judged: the log's times contradict each other ({unsupported})")
                if unsupported and cls.id != MEASURABLE_RULE_ID else evaluate_rule(cls, goodput)
                for cls in rules.values()]
    return sorted(findings, key=lambda f: (-f.status.rank, -f.severity.rank, f.id))
