"""Structure inferred from the log itself, for logs no known form reads: the process's clock among every
clock on the lines (tpudoctor.logs.clocks), the step series by template mining (tpudoctor.logs.templates),
MLPerf's MLLOG timeline (mllog). The known forms are tried first; this reads a log they found no step in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.mllog import MARK, read_mllog
from tpudoctor.goodput.readers import Event
from tpudoctor.logs import clocks
from tpudoctor.logs.buffer import LineBuffer, first_match_per_row
from tpudoctor.logs.prefixes import clean, kubectl_worker, unwrapped
from tpudoctor.logs.templates import (
    Series,
    matcher,
    points_by_matcher,
    points_of_fields,
    step_series,
)

FRAMEWORK = "inferred"
SAVED = re.compile(r"(?i)\b(?:saved?|saving|wrote|writing)\b.{0,40}\bcheckpoint|\bcheckpoint\b.{0,40}\b(?:saved|written)\b")
RESTORING = re.compile(r"(?i)\b(?:resuming|restoring|loading)\b.{0,40}\bcheckpoint|\bcheckpoint\b.{0,20}\b(?:restoring|loading)\b")
RESTORED = re.compile(r"(?i)\b(?:resumed|restored|loaded)\b.{0,40}\bcheckpoint|\bcheckpoint\b.{0,40}\b(?:restored|loaded)\b")
COMPILING = re.compile(r"(?i)\b(?:compilation|compiling|recompil\w*|compiled)\b(?!\s+(?:with|by|for|flags|version))")
LAST_NUMBER = re.compile(r"(\d+)\D*$")
MAX_BYTES = 2 << 30
MAX_LINES = 40_000_000
"""Logs longer than these are read by their known forms only (the inference holds the whole log, its bytes and
16 bytes of line offsets a line, and an event a step line: a peak RSS of 1.7 times a 1 GiB log's size)."""
LIST_MAX_BYTES = 512 << 20
LIST_MAX_LINES = 4_000_000
"""The same for a log split line by line (carriage returns, overlong lines): a Python string a line."""
SAMPLE_LINES = 20_000
"""The step template is found in a log's first lines; the rest is scanned for it alone."""
EDGE_LINES = 1000
"""The log's first and last lines whose clocks bound its wall time."""


def infer(lines: Sequence[str], source: str, *, year: int | None = None) -> tuple[list[Event], dict[str, Any]] | None:
    """Events and what was inferred (``clock``, ``steps_from``, ``relative``, ``first_t``, ``last_t``, ``mllog``),
    or None when the log shows no step series."""
    if any(MARK in line for line in lines[:200]) or any(MARK in line for line in lines[-200:]):
        events, summary = read_mllog(lines, source)
        if not events:
            return None
        return events, {"clock": "MLPerf's time_ms (epoch milliseconds) on every :::MLLOG line",
                        "resolution_s": 0.001, "durations": None,
                        "steps_from": f"MLPerf blocks: {summary['blocks']} block_stop lines" if summary["blocks"]
                        else f"MLPerf epochs (no blocks): {summary['epochs']} epoch_stop lines",
                        "relative": False, "first_t": summary["first_t"], "last_t": summary["last_t"],
                        "mllog": {k: summary[k] for k in ("init_ms", "run_ms", "status", "blocks", "evals")}}
    if year is None:  # a glog/absl date has no year: the log's ISO dates give it
        year = next((int(m[1]) for line in lines[:1000] if (m := clocks.ISO.search(line))), None)
    read = _Lines(lines, year)
    sample = range(min(len(lines), SAMPLE_LINES))
    series = step_series([read.message(i) for i in sample])
    if series is None:
        return None
    edges = list(range(min(len(lines), EDGE_LINES))) + list(range(max(len(lines) - EDGE_LINES, 0), len(lines)))
    picked = {i: read.clock(i) for i in sorted(set(edges) | {p.index for p in series.points})}
    rows: _Rows | None = None
    if len(lines) > SAMPLE_LINES:  # the rest of a long log: lines with the template's longest literal, one regex
        series, rows = _rest_of_series(lines, series)
        kinds = [c.kind for p in series.points if (c := picked.get(p.index)) is not None]  # the step lines' clock
        kind_seen = max(set(kinds), key=kinds.count) if kinds else None
        rest = [p.index for p in series.points if p.index not in picked]
        # each row's clock is its own (the same read in any batch): the rows already joined serve for the rest
        by_row = clocks.innermost_times(rows.joined, len(rows.lines), kind_seen, year=year) \
            if rows is not None and kind_seen else None
        columnar = None if by_row is None else [by_row[k] for k in rows.positions(rest)]
        if columnar is not None:
            picked.update(zip(rest, columnar, strict=True))
        for i in rest if columnar is None else ():
            picked[i] = clocks.innermost_of_kind(lines[i], kind_seen, year=year) \
                if kind_seen not in (None, "relative") else read.clock(i)
    step_clocks = [picked[p.index] for p in series.points]
    has_absolute = any(c is not None and c.absolute for c in picked.values())
    on_steps = [c.kind for c in step_clocks if c is not None and (c.absolute or not has_absolute)]
    kind = max(set(on_steps), key=on_steps.count) if on_steps else \
        next((c.kind for c in picked.values() if c is not None and (c.absolute or not has_absolute)), None)
    events: list[Event] = []
    if read.start_from_counter is not None:
        events.append(Event(Kind.START, read.start_from_counter[0], framework=FRAMEWORK, source=source, line_no=0,
                            text=f"the process's own counter of time since its start: {read.start_from_counter[1]}"))
    elif not has_absolute and kind == "relative":
        events.append(Event(Kind.START, 0.0, framework=FRAMEWORK, source=source, line_no=0,
                            text="the process's start (its relative clock's zero)"))
    texts = _step_texts(lines, series.points, rows)
    workers = read.workers
    events.extend(Event(Kind.STEP, clock.t if clock is not None and clock.absolute == has_absolute else None,
                        step=point.step, seconds=point.seconds, approx=point.approx, worker=workers.get(point.index),
                        framework=FRAMEWORK, source=source, line_no=point.index + 1, text=line.strip()[:300])
                  for point, line, clock in zip(series.points, texts, step_clocks, strict=True))
    events.extend(_checkpoint_events(lines, read, picked, has_absolute, source))
    times = [c.t for c in picked.values() if c is not None and c.absolute == has_absolute]
    if events and events[0].kind is Kind.START and events[0].t is not None:
        times.append(events[0].t)
    resolution = max((c.resolution_s for c in step_clocks if c is not None and c.absolute == has_absolute),
                     default=None)
    return events, {"clock": clocks.describe(kind, read.several) if kind else "no clock on any line",
                    "resolution_s": resolution, "durations": _durations_against_gaps(series.points, step_clocks),
                    "steps_from": series.why, "relative": kind == "relative" and not has_absolute,
                    "first_t": min(times) if times else None, "last_t": max(times) if times else None,
                    "mllog": None}


class _Rows:
    """The lines past the sample that hold the step template's literal (every step line there), joined once:
    their fields, clocks and texts are read from this one copy."""

    def __init__(self, lines: np.ndarray, joined: bytes):
        self.lines, self.joined = lines, joined

    def positions(self, indices: list[int]) -> list[int]:
        """Where each of these lines (all among ``lines``) stands among the rows."""
        return np.searchsorted(self.lines, np.array(indices, dtype=np.int64)).tolist()


def _rest_of_series(lines: Sequence[str], series: Series) -> tuple[Series, _Rows | None]:
    """The series' points past the sample, on the lines that hold the template's longest literal: in a buffer
    the literal is found over the whole log at once, numpy maps its hits to lines and one regex pass over those
    lines joined reads their fields (the rows come back with the series); a list is filtered line by line."""
    pattern = matcher(series)
    keyword = max((part.strip() for part in series.template.replace("<T>", "<*>").split("<*>")), key=len)
    if isinstance(lines, LineBuffer):
        candidates = lines.lines_with(keyword.encode(), from_line=SAMPLE_LINES, frequent=True) if keyword else \
            np.arange(SAMPLE_LINES, len(lines), dtype=np.int64)
        rows = _Rows(candidates, lines.joined(candidates))
        groups = (series.field + 1,) + ((series.duration_field + 1,) if series.duration_field is not None else ())
        literal_digits = any(ch.isdigit() for ch in re.sub(r"<\*>|<T>", "", series.template))
        at, fields = first_match_per_row(re.compile(matcher(series, within_rows=True).pattern.encode()),
                                         rows.joined, *groups, digits_alike=not literal_digits)
        return points_of_fields(series, candidates[at].tolist(), fields[0],
                                fields[1] if series.duration_field is not None else None, head=series.points), rows
    return points_by_matcher(series, pattern, ((i, lines[i]) for i in range(SAMPLE_LINES, len(lines))
                                               if not keyword or keyword in lines[i]), head=series.points), None


def _step_texts(lines: Sequence[str], points: list, rows: _Rows | None) -> list[str]:
    """Each step line's text: past the sample, from the rows already joined (decoded at once)."""
    if not isinstance(lines, LineBuffer):
        return [lines[p.index] for p in points]
    head = [p.index for p in points if p.index < SAMPLE_LINES]
    texts = lines.texts(np.array(head, dtype=np.int64))
    if rows is not None and len(head) < len(points):
        decoded = rows.joined.decode("utf-8", errors="replace").split("\n")
        texts.extend(decoded[k] for k in rows.positions([p.index for p in points[len(head):]]))
    return texts


DURATION_AGREES = 0.05
"""A printed step time within 5 % (or the clock's resolution) of the clock's gap agrees with it."""


def _durations_against_gaps(points: list, step_clocks: list) -> dict[str, Any] | None:
    """Where a step line prints its own time and the step before it is the line before: does the clock's gap say
    the same? A disagreement is evidence against one of them."""
    if all(p.seconds is None for p in points):
        return None
    checked = agree = 0
    worst: tuple[float, int] | None = None
    for (a, ca), (b, cb) in zip(zip(points, step_clocks, strict=True), list(zip(points, step_clocks, strict=True))[1:],
                                strict=False):
        if b.seconds is None or ca is None or cb is None or b.step - a.step != 1:
            continue
        gap = cb.t - ca.t
        checked += 1
        off = abs(gap - b.seconds)
        if off <= max(DURATION_AGREES * b.seconds, cb.resolution_s + ca.resolution_s):
            agree += 1
        elif worst is None or off > worst[0]:
            worst = (off, b.step)
    if not checked:
        return None
    return {"checked": checked, "agree": agree,
            "worst": None if worst is None else {"step": worst[1], "off_s": round(worst[0], 3)}}


def _checkpoint_events(lines: Sequence[str], read: _Lines, picked: dict, has_absolute: bool,
                       source: str) -> list[Event]:
    """Checkpoint saves and restores and compilations in plain words (``Checkpoint saved to
    .../model_epoch_251.pth``, ``resuming from checkpoint``, fairseq's ``XLA compilation detected``), each quoting
    its line; a save's or restore's step is the line's last number where it names one."""
    out = []
    candidates = lines.lines_with(b"heckpoint", b"HECKPOINT", b"ompil").tolist() if isinstance(lines, LineBuffer) else \
        (i for i, line in enumerate(lines) if "heckpoint" in line or "HECKPOINT" in line or "ompil" in line)
    for i in candidates:
        line = lines[i]
        checkpoint = "heckpoint" in line or "HECKPOINT" in line
        text = read._text(i)
        if checkpoint:
            kind = Kind.SAVE_END if SAVED.search(text) else Kind.RESTORE_END if RESTORED.search(text) else \
                Kind.RESTORE_START if RESTORING.search(text) else None
        else:
            kind = Kind.COMPILE if COMPILING.search(text) else None
        if kind is None:
            continue
        clock = picked[i] if i in picked else picked.setdefault(i, read.clock(i))
        t = clock.t if clock is not None and clock.absolute == has_absolute else None
        n = LAST_NUMBER.search(text)
        step = int(n.group(1)) if n and kind is not Kind.COMPILE else None
        out.append(Event(kind, t, step=step, mode="sync" if kind is Kind.SAVE_END else None,
                         worker=read.workers.get(i), framework=FRAMEWORK, source=source, line_no=i + 1,
                         text=line.strip()[:300]))
    return out


class _Lines:
    """One log's lines read lazily: each line's message (clocks masked, prefixes off) and its process clock."""

    def __init__(self, lines: Sequence[str], year: int | None):
        self.lines, self.year = lines, year
        self.workers: dict[int, str | None] = {}
        self.texts: dict[int, str] = {}
        self.several = False
        self.start_from_counter: tuple[float, str] | None = None

    def _text(self, i: int) -> str:
        text = self.texts.get(i)
        if text is None:
            worker, text = kubectl_worker(clean(self.lines[i]))
            self.workers[i] = worker
            self.texts[i] = text
        return text

    def message(self, i: int) -> str:
        return clocks.GLOG.sub("<T>", clocks.ISO.sub("<T>", unwrapped(self._text(i))))

    def clock(self, i: int) -> clocks.LineClock | None:
        text = self._text(i)
        found = clocks.clocks_on(text, year=self.year)
        self.several = self.several or sum(c.absolute for c in found) > 1
        choice = clocks.pick(found)
        absolute = choice if choice is not None and choice.absolute else None
        relative = next((c for c in found if not c.absolute), None)
        if self.start_from_counter is None and absolute is not None and relative is not None:
            self.start_from_counter = (absolute.t - relative.t, text[:200])
        return absolute or relative
