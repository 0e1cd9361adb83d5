"""Reading one source's lines into events: the framework readers (``readers``) over the shared log layer.

Times come from ``tpudoctor.logs.clock`` and prefixes are taken off by ``tpudoctor.logs.prefixes``, so a line gets
the same time and fields in every reader. ``read_events`` streams text lines (Cloud Logging entries too);
``read_event_blocks`` reads a file as blocks of raw bytes and decodes only the lines that hold a keyword.
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Iterable, Iterator

from tpudoctor.errors import InputError
from tpudoctor.goodput.line_patterns import Kind, Pattern
from tpudoctor.goodput.readers import READERS, Event, LineReader
from tpudoctor.logs import prefilter, steps
from tpudoctor.logs.clock import ASCTIME, Clock, asctime_seconds, duration_s, iso_utc, time_of_day_s
from tpudoctor.logs.prefixes import clean, kubectl_worker
from tpudoctor.logs.sources import split_lines

MAX_TEXT_CHARS = 300
LAST_STAMP_CANDIDATES = 64
CLOCK_JUMP_S = 1.0
"""A line this much earlier than the latest before it: the clock went back."""
MAX_CLOCK_JUMPS = 20
LONE_LINE_AHEAD_S = 60.0
"""A single line this much ahead of the line after it, which is back in step with the line before it: that one
line's clock is wrong (not the host's clock), so it is set aside instead of stretching the wall time."""
ZONE_SKEW_S = 1800.0
"""A line that names its zone (XPK's ``UTC``) and the zoneless line next to it out of order by this much: the
zoneless lines were read in the wrong zone (``--tz``) or with the wrong date."""
PROBE_BYTES = 4096
PROBE_LINES = 8
TRAILING_NUMBER = re.compile(r"(\d+)\D*$")


STAMP_STARTS = frozenset("IWEF[0123456789")


def _read_time(clock: Clock, line: str, given_t: float | None) -> float | None:
    t = clock.read(line) if line[:1] in STAMP_STARTS else None
    if t is None and given_t is not None:
        clock.anchor(given_t)
        return given_t
    return t


def _seconds_group(text: str, where: str) -> float:
    """A ``(?P<seconds>...)`` group's text as seconds; only a user's --step-pattern can catch something else."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise InputError(f"{where}: the (?P<seconds>...) group of --step-pattern caught {text[:60]!r}, not a "
                         "number of seconds", hint="make the group match only a number, e.g. (?P<seconds>[0-9.]+)")
    return seconds


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


class _Counters:
    """Steps of frameworks whose lines carry no step number: HF Trainer's loss dicts are numbered in order
    (one logging interval each); a Keras epoch line ends step ``epoch x steps per epoch``."""

    __slots__ = ("hf_logs", "keras_epoch")

    def __init__(self) -> None:
        self.hf_logs = 0
        self.keras_epoch = 1


def _hms(seconds: float) -> str:
    sign = "-" if seconds < 0 else "+"
    minutes = round(abs(seconds) / 60)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def read_events(lines: Iterable[str | tuple[str, float | None, str | None]], source: str, *, clock: Clock | None = None,
                readers: Iterable[LineReader] = READERS, worker: str | None = None,
                stats: dict | None = None) -> Iterator[Event]:
    """Every event in ``lines`` (text lines of one source), in order, with the time of the line.

    A line may also be ``(text, time, worker)`` for sources whose entries carry their own time and worker
    (Cloud Logging); the text's own timestamp, where it has one, still wins.

    ``stats`` (a dict) is filled with ``lines``, ``timed_events``, ``first_t`` and ``last_t`` (the source's
    first and last timestamps, any line), ``by_worker`` (the same per labelled worker) and ``year_source``.
    """
    reader = EventReader(source, clock=clock, readers=readers, worker=worker, stats=stats)
    for raw in lines:
        event = reader.release(reader.line(raw))
        if event is not None:
            yield event
    event = reader.finish()
    if event is not None:
        yield event


def read_event_blocks(blocks: Iterable[bytes], source: str, *, clock: Clock | None = None,
                      readers: Iterable[LineReader] = READERS, stats: dict | None = None) -> Iterator[Event]:
    """The same events from blocks of whole lines as raw bytes (``tpudoctor.logs.sources.byte_blocks``): once the
    source's first time is read, only the lines that hold a reader's keyword are decoded and read (one RE2 pass
    over each block), so a long log of noise costs little more than reading it."""
    reader = EventReader(source, clock=clock, readers=readers, stats=stats)
    for block in blocks:
        yield from reader.block(block)
    event = reader.finish()
    if event is not None:
        yield event


_KUBECTL_MARK = prefilter.Literals(["[pod/"])
"""Bytes that need every line read: a carriage return (redrawn bars), an escape (colours that may split a keyword)
and kubectl's worker prefix (RE2 finds it several times faster than ``in``: 0.03 against 0.43 s a GiB)."""


def _last_lines(data: bytes, count: int) -> list[bytes]:
    """The last ``count`` lines of a block, its trailing newlines left out (``data.rstrip(b"\n").rsplit(b"\n",
    count)[-count:]`` without copying the whole block to strip it)."""
    end = len(data)
    while end and data[end - 1] == 10:
        end -= 1
    cut = end
    for _ in range(count):
        cut = data.rfind(b"\n", 0, cut)
        if cut < 0:
            break
    return data[cut + 1:end].split(b"\n")


class EventReader:
    """One source's lines in order -> events; keeps the clock, the counters and the source's first and last times."""

    def __init__(self, source: str, *, clock: Clock | None = None, readers: Iterable[LineReader] = READERS,
                 worker: str | None = None, stats: dict | None = None):
        self.source = source
        self.clock = clock or Clock()
        self.readers = tuple(readers)
        self.worker = worker
        keywords = tuple({k for r in self.readers for k in r.keywords})
        every_reader_has_keywords = bool(keywords) and all(r.keywords for r in self.readers)
        self.any_keyword = re.compile("|".join(re.escape(k) for k in sorted(keywords, key=len, reverse=True))) \
            if every_reader_has_keywords else None
        self.prefilter = prefilter.Literals(keywords) if every_reader_has_keywords else None
        self.counters = _Counters()
        self.state = stats if stats is not None else {}
        self.state.setdefault("lines", 0)
        self.state.setdefault("timed_events", 0)
        self.by_worker: dict[str, list[float]] = self.state.setdefault("by_worker", {})
        self.last_by_worker: dict[str, tuple[str, float | None]] = {}
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.last_stamped: collections.deque[tuple[int, str]] = collections.deque(maxlen=LAST_STAMP_CANDIDATES)
        self.last_given: float | None = None
        self.tod_base: float | None = None
        self.tod_last: float | None = None
        self.line_no = 0
        self.latest: float | None = None
        """The latest time read so far in this clock segment (a backward jump starts a new segment)."""
        self.latest_line = 0
        self.before_latest: float | None = None
        """The latest time before the line that set ``latest`` (to tell one line ahead from a clock step)."""
        self.lines_at_latest = 0
        self.jumps: list[dict] = []
        self.jump_count = 0
        self.outliers: list[dict] = []
        self.outlier_count = 0
        self.zone_skews: list[dict] = []
        self.last_seen: tuple[float, str] | None = None
        """The last zoneless time read, and where."""
        self.zoned_waiting: list[tuple[float, str, float | None, str | None]] = []
        """Zoned lines since the last zoneless one: (time, where, the zoneless time before, where)."""
        self.held: Event | None = None
        """The latest event, held until the next timed line: only that line tells that its clock ran ahead."""
        self.observe_every_line = False

    # ------------------------------------------------------------------ blocks
    def block(self, data: bytes) -> Iterator[Event]:
        back = self._clock_goes_back_in(data)
        if back or self.prefilter is None or self.first_t is None or b"\r" in data or b"\x1b" in data or \
                _KUBECTL_MARK.search(data) >= 0:
            self.observe_every_line = back  # where the clock went back, exactly: every stamped line is read
            try:
                yield from self._every_line(data)
            finally:
                self.observe_every_line = False
            return
        base, at = self.line_no, 0
        for start, end in self.prefilter.line_spans(data):
            base += data.count(b"\n", at, start)
            at = start
            self.line_no = base  # line() adds the line itself
            event = self.release(self.line(data[start:end].decode("utf-8", errors="replace"), prefiltered=True))
            if event is not None:
                yield event
        self.line_no = base + data.count(b"\n", at)
        if data and not data.endswith(b"\n"):
            self.line_no += 1
        tails = _last_lines(data, LAST_STAMP_CANDIDATES)
        last_no = self.line_no - len(tails) + 1
        self.last_stamped.extend((last_no + i, tail.decode("utf-8", errors="replace"))
                                 for i, tail in enumerate(tails) if tail[:1] in _STAMP_START_BYTES)

    def _every_line(self, data: bytes) -> Iterator[Event]:
        for line in split_lines(data):
            event = self.release(self.line(line))
            if event is not None:
                yield event

    def _clock_goes_back_in(self, data: bytes) -> bool:
        """Whether the block's first or last stamped line is earlier than the time before it (cheap: two reads)."""
        first = last = None
        clock = self.clock.copy()  # a probe out of line order must not move the source's year
        for raw in data[:PROBE_BYTES].split(b"\n")[:PROBE_LINES]:
            if raw[:1] in _STAMP_START_BYTES:
                first = _read_time(clock, raw.decode("utf-8", errors="replace"), None)
                if first is not None:
                    break
        for raw in reversed(data[-PROBE_BYTES:].split(b"\n")[-PROBE_LINES:]):
            if raw[:1] in _STAMP_START_BYTES:
                last = _read_time(clock, raw.decode("utf-8", errors="replace"), None)
                if last is not None:
                    break
        before = self.latest
        return (first is not None and before is not None and first < before - CLOCK_JUMP_S) or \
            (first is not None and last is not None and last < first - CLOCK_JUMP_S)

    def _observe(self, t: float, line_no: int) -> None:
        """Times in the order their lines stand: one earlier than the latest by more than CLOCK_JUMP_S is a clock
        that went back (a clock step, two files' lines concatenated); a new segment starts there. Where only the
        one line before ran ahead, that line is the outlier (``_lone_line_ahead``), not the clock."""
        self._against_zoned(t, line_no)
        if self.latest is not None and t < self.latest - CLOCK_JUMP_S:
            if self._lone_line_ahead(t, line_no):
                return
            self.jump_count += 1
            if len(self.jumps) < MAX_CLOCK_JUMPS:
                self.jumps.append({"at": f"{self.source}:{line_no}", "jump_s": round(t - self.latest, 3),
                                   "from": iso_utc(self.latest), "to": iso_utc(t), "step": None})
            self.before_latest, self.latest, self.latest_line, self.lines_at_latest = None, t, line_no, 1
        elif self.latest is None or t > self.latest:
            self.before_latest, self.latest, self.latest_line, self.lines_at_latest = self.latest, t, line_no, 1
        else:
            self.lines_at_latest += 1

    def _lone_line_ahead(self, t: float, line_no: int) -> bool:
        """Whether the line that set ``latest`` stands alone ahead of both its neighbours (this line is back in
        step with the one before it). Its event, still held, takes the step's own duration after the line before
        (a step line that says it) or no time at all; the wall time keeps the neighbours' clock."""
        before, ahead_s = self.before_latest, self.latest - t  # type: ignore[operator]
        if self.lines_at_latest != 1 or before is None or ahead_s < LONE_LINE_AHEAD_S or t < before - CLOCK_JUMP_S:
            return False
        held = self.held
        treated = "not an event line: its time is not used"
        if held is not None and held.line_no == self.latest_line and held.t == self.latest:
            own = held.seconds if held.kind is Kind.STEP else None
            if own is not None and 0 <= own:
                held.t = min(before + own, t)
                treated = f"its time set to the step's own duration ({own:g} s) after the line before"
            else:
                held.t = None
                treated = "its time dropped"
        self.outlier_count += 1
        if len(self.outliers) < MAX_CLOCK_JUMPS:
            self.outliers.append({"at": f"{self.source}:{self.latest_line}", "ahead_s": round(ahead_s, 3),
                                  "time": iso_utc(self.latest), "next_at": f"{self.source}:{line_no}",
                                  "next_time": iso_utc(t), "treated": treated})
        self.latest, self.latest_line, self.lines_at_latest = max(before, t), line_no, 1
        return True

    def _against_zoned(self, t: float, line_no: int) -> None:
        """Each zoned line (XPK's ``UTC``) between the zoneless lines around it: out of order with one of them by
        ZONE_SKEW_S, and close to neither, means the zoneless lines were read in the wrong zone or with the wrong
        date. (A zoned line close to one neighbour is a clock jump or a join of two logs, not a zone.)"""
        for zoned_t, where, before_t, before_at in self.zoned_waiting:
            after = t - zoned_t
            before = None if before_t is None else zoned_t - before_t
            close = any(d is not None and abs(d) < ZONE_SKEW_S for d in (before, after))
            if close:
                continue
            if after < -ZONE_SKEW_S:
                self._zone_skew(zoned_t, where, t, f"{self.source}:{line_no}")
            elif before is not None and before < -ZONE_SKEW_S:
                self._zone_skew(zoned_t, where, before_t, before_at)  # type: ignore[arg-type]
        self.zoned_waiting.clear()
        self.last_seen = (t, f"{self.source}:{line_no}")

    def _zoned(self, zoned_t: float, where: str) -> None:
        before_t, before_at = self.last_seen if self.last_seen is not None else (None, None)
        if len(self.zoned_waiting) < MAX_CLOCK_JUMPS:
            self.zoned_waiting.append((zoned_t, where, before_t, before_at))

    def _zone_skew(self, zoned_t: float, zoned_at: str, zoneless_t: float, zoneless_at: str) -> None:
        if len(self.zone_skews) >= MAX_CLOCK_JUMPS:
            return
        skew = zoneless_t - zoned_t
        entry = {"zoned_at": zoned_at, "zoned": iso_utc(zoned_t), "zoneless_at": zoneless_at,
                 "zoneless": iso_utc(zoneless_t), "skew_s": round(skew, 3), "tz": self.clock.tz.name}
        given = self.clock.tz.offset_s(zoneless_t)
        suggested = given + round(skew / 900) * 900  # the offset that would put the zoneless lines in order
        if abs(suggested) <= 14 * 3600 and abs(skew) <= 26 * 3600:
            entry["suggested_tz"] = "UTC" if suggested == 0 else _hms(suggested)
        self.zone_skews.append(entry)

    def release(self, event: Event | None) -> Event | None:
        """Hold ``event`` and give back the one held before it: each event leaves once the next event line has
        been timed, so a lone line whose clock ran ahead (``_lone_line_ahead``) is set right before it is used."""
        if event is None:
            return None
        previous, self.held = self.held, event
        return previous

    # ------------------------------------------------------------------- lines
    def line(self, raw: str | tuple[str, float | None, str | None], *, prefiltered: bool = False) -> Event | None:
        """The event of one line, or None; ``prefiltered``: the line is known to hold a reader's keyword."""
        self.line_no += 1
        line_no = self.line_no
        clock, state, by_worker = self.clock, self.state, self.by_worker
        given_t = None
        line_worker = self.worker
        if isinstance(raw, tuple):  # (text, time, worker) from a source that stamps entries (Cloud Logging)
            raw, given_t, line_worker = raw
        line = clean(raw)
        pod, line = kubectl_worker(line)
        if pod is not None:
            line_worker = pod
        # Times are read lazily (parsing every prefix was half the cost): the source's first timed line, each
        # worker's first, every event line, and at the end the last timed line.
        stampable = line[:1] in STAMP_STARTS
        t = None
        if stampable:
            self.last_stamped.append((line_no, line))
            if line_worker is not None:
                self.last_by_worker[line_worker] = (line, given_t)
            if self.first_t is None or (line_worker is not None and line_worker not in by_worker):
                t = _read_time(clock, line, given_t)
                if t is not None:
                    self.first_t = t if self.first_t is None else self.first_t
                    if line_worker is not None:
                        by_worker.setdefault(line_worker, [t, t])
            elif self.observe_every_line:
                t = _read_time(clock, line, given_t)
            if t is not None:
                self._observe(t, line_no)
        elif given_t is not None:
            self.last_given = given_t
            if self.first_t is None:
                self.first_t = t = _read_time(clock, line, given_t)
            if line_worker is not None:
                self.last_by_worker[line_worker] = (line, given_t)
                by_worker.setdefault(line_worker, [given_t, given_t])
        if not prefiltered and self.any_keyword is not None and not self.any_keyword.search(line):
            return None
        for reader in self.readers:
            if reader.keywords and not any(k in line for k in reader.keywords):
                continue
            hit = reader.first_hit(line)
            if hit is None:
                continue
            pattern, m = hit
            if t is None and (stampable or given_t is not None):
                t = _read_time(clock, line, given_t)
                if t is not None:
                    self._observe(t, line_no)
            if t is not None:
                state["timed_events"] += 1
            event = self._event(reader, pattern, m, line, line_no, line_worker, t)
            if self.jumps and event.kind is Kind.STEP and self.jumps[-1]["at"] == event.where:
                self.jumps[-1]["step"] = event.step  # the clock went back on this step's line
            return event
        return None

    def _event(self, reader: LineReader, pattern: Pattern, m: re.Match, line: str, line_no: int,
               line_worker: str | None, t: float | None) -> Event:
        clock, counters = self.clock, self.counters
        groups = m.groupdict()
        event = Event(pattern.kind, t, worker=line_worker, framework=reader.framework, source=self.source,
                      line_no=line_no, text=line[:MAX_TEXT_CHARS], mode=pattern.mode or groups.get("mode"))
        event.step = _int(groups.get("step"))
        if event.step is None and groups.get("path"):
            n = TRAILING_NUMBER.search(groups["path"].rstrip("`'\"./"))
            event.step = int(n.group(1)) if n else None
        if groups.get("approx_step"):
            event.step, event.approx = steps.approx_int(groups["approx_step"]), True
        if groups.get("seconds"):
            event.seconds = _seconds_group(groups["seconds"], f"{self.source}:{line_no}")
        elif groups.get("dur"):
            event.seconds = duration_s(groups["dur"])
        if groups.get("code") is not None:
            event.code = int(groups["code"])
        if groups.get("date"):
            d = ASCTIME.search(groups["date"])
            if d:
                event.t = asctime_seconds(d, clock.tz)
                if event.t is not None and d.group(6):
                    self._zoned(event.t, f"{self.source}:{line_no}")
                if event.t is not None:
                    clock.anchor(event.t)
                    if self.first_t is None:
                        self.first_t = event.t
                    self.last_t = event.t if self.last_t is None else max(self.last_t, event.t)
        if groups.get("asctime") and event.t is None:
            d = ASCTIME.search(groups["asctime"])
            event.t = asctime_seconds(d, clock.tz) if d else None
        if groups.get("tod") and event.t is None:
            tod = time_of_day_s(groups["tod"])
            if tod is not None:
                if self.tod_base is None:
                    base = self.last_t if self.last_t is not None else self.first_t
                    self.tod_base = (base // 86400 * 86400) if base is not None else 0.0
                elif self.tod_last is not None and tod < self.tod_last - 43200:  # past midnight
                    self.tod_base += 86400
                self.tod_last = tod
                event.t = self.tod_base + tod
                if self.first_t is None:  # no date anywhere: a clock for the window, with no date
                    self.state["time_of_day_only"] = True
                self.last_t = event.t if self.last_t is None else max(self.last_t, event.t)
        if groups.get("epoch"):
            counters.keras_epoch = int(groups["epoch"])
        if groups.get("epoch_batch"):  # Keras: a batch within an unfinished epoch
            event.step = (counters.keras_epoch - 1) * int(groups["epoch_total"]) + int(groups["epoch_batch"])
        elif groups.get("epoch_steps"):  # Keras: an epoch's last line
            event.seconds = duration_s(groups["dur"]) if groups.get("dur") else None
            event.step = counters.keras_epoch * int(groups["epoch_steps"])
        elif reader.framework == "hf-trainer" and pattern.kind is Kind.STEP:
            counters.hf_logs += 1
            event.step, event.approx, event.mode = counters.hf_logs, True, "logging-interval"
        return event

    # ------------------------------------------------------------------ finish
    def finish(self) -> Event | None:
        """Fill the stats; the event still held, if one, to be yielded last."""
        clock, state = self.clock, self.state
        end_t = None
        for end_no, candidate in reversed(self.last_stamped):  # a line may start like a stamp and hold none
            end_t = _read_time(clock, candidate, None)
            if end_t is not None:
                if end_no > self.latest_line:
                    self._observe(end_t, end_no)
                break
        self._against_zoned(float("inf"), self.line_no)  # zoned lines at the end: their zoneless line before only
        known = [x for x in (end_t, self.last_t, self.last_given) if x is not None]
        end_t = max(known) if known else None
        for worker, (line, given) in self.last_by_worker.items():
            wt = _read_time(clock, line, given)
            if wt is not None and worker in self.by_worker:
                self.by_worker[worker][1] = max(self.by_worker[worker][1], wt)
        state["lines"] += self.line_no
        state["first_t"] = self.first_t if state.get("first_t") is None else state["first_t"]
        state["last_t"] = end_t if end_t is not None else state.get("last_t")
        state["year_source"] = clock.year_source
        state["clock_jumps"] = state.get("clock_jumps", []) + self.jumps
        state["clock_jump_count"] = state.get("clock_jump_count", 0) + self.jump_count
        state["clock_outliers"] = state.get("clock_outliers", []) + self.outliers
        state["zone_skews"] = state.get("zone_skews", []) + self.zone_skews
        held, self.held = self.held, None
        return held




_STAMP_START_BYTES = frozenset(bytes([c]) for c in b"IWEF[0123456789")
