"""MLPerf Training result logs (``:::MLLOG {json}`` lines, mlcommons' logging format): a real TPU timeline with
its own milliseconds. init_start..init_stop is start-up, run_start..run_stop the timed run, each
block_start..block_stop a stretch of training (an eval_accuracy closes it); a block is a step here, and where a
log has no blocks (MiniGo), an epoch_stop is.

>>> events, summary = read_mllog([':::MLLOG {"time_ms": 1000, "event_type": "INTERVAL_START", "key": "init_start"}',
...     ':::MLLOG {"time_ms": 5000, "key": "init_stop"}', ':::MLLOG {"time_ms": 5000, "key": "run_start"}',
...     ':::MLLOG {"time_ms": 9000, "key": "block_stop"}', ':::MLLOG {"time_ms": 9500, "key": "run_stop",'
...     ' "metadata": {"status": "success"}}'], "r.txt")
>>> summary["init_ms"], summary["run_ms"], summary["status"], [e.kind.value for e in events]
(4000, 4500, 'success', ['start', 'prep_end', 'step'])
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.readers import Event

MARK = ":::MLLOG"
FRAMEWORK = "mlperf-mllog"
COUNTED_FROM_START = "counted-from-start"
"""A first step line whose number counts the steps done since its run started (MLPerf's epoch counter)."""


def read_mllog(lines: Iterable[str], source: str) -> tuple[list[Event], dict[str, Any]]:
    """The events of an MLLOG result log and its summary (init_ms, run_ms, status, blocks, evals)."""
    events: list[Event] = []
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    status = None
    blocks = evals = 0
    stops: list[tuple[Event, float | None, float | None]] = []
    starts: list[float] = []
    counts: dict[float, float] = {}
    times: list[int] = []
    epochs: list[Event] = []
    for line_no, line in enumerate(lines, 1):
        at = line.find(MARK)
        if at < 0:
            continue
        try:
            entry = json.loads(line[at + len(MARK):])
            key, t_ms = entry["key"], int(entry["time_ms"])
        except (ValueError, KeyError, TypeError):
            continue
        times.append(t_ms)
        meta = entry.get("metadata") or {}
        first.setdefault(key, t_ms)
        last[key] = t_ms
        t = t_ms / 1000.0
        text = line.strip()[:300]
        if key == "init_start" and first[key] == t_ms:
            events.append(Event(Kind.START, t, framework=FRAMEWORK, source=source, line_no=line_no, text=text))
        elif key == "init_stop":
            events.append(Event(Kind.PREP_END, t, framework=FRAMEWORK, source=source, line_no=line_no, text=text))
        elif key == "epoch_stop":  # a step only where the log has no blocks (MiniGo's generations)
            epochs.append(Event(Kind.STEP, t, step=len(epochs) + 1, framework=FRAMEWORK, source=source,
                                line_no=line_no, text=text))
        elif key == "block_stop":
            blocks += 1
            events.append(Event(Kind.STEP, t, step=blocks, framework=FRAMEWORK, source=source, line_no=line_no,
                                text=text))
            stops.append((events[-1], _number(meta.get("first_epoch_num")), _number(meta.get("epoch_count"))))
        if key in ("block_start", "block_stop") and _number(meta.get("first_epoch_num")) is not None:
            starts.append(_number(meta.get("first_epoch_num")))
            if key == "block_start" and _number(meta.get("epoch_count")) is not None:
                counts[_number(meta["first_epoch_num"])] = _number(meta["epoch_count"])
        elif key == "eval_accuracy":
            evals += 1
        elif key == "run_stop":
            status = (entry.get("metadata") or {}).get("status")
    _epoch_steps(stops, starts, counts)
    if not blocks and epochs:
        events = sorted(events + epochs, key=lambda e: e.line_no)
    summary: dict[str, Any] = {
        "init_ms": _span(first, last, "init_start", "init_stop"),
        "run_ms": _span(first, last, "run_start", "run_stop"),
        "status": status, "blocks": blocks, "evals": evals, "epochs": len(epochs),
        # the run is init_start..run_stop (lines after run_stop, a later job's, are not its time)
        "first_t": first.get("init_start", min(times) if times else None),
        "last_t": last.get("run_stop", max(times) if times else None),
    }
    for key in ("first_t", "last_t"):
        summary[key] = summary[key] / 1000.0 if summary[key] is not None else None
    return events, summary


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _epoch_steps(stops: list[tuple[Event, float | None, float | None]], starts: list[float],
                 counts: dict[float, float]) -> None:
    """A block is as many steps as its epoch count (unet3d's first block is 875 epochs, the next 18 each): each
    block_stop's step becomes the epoch counter it reached, where every counter is a whole number."""
    ends = []
    for _event, first, count in stops:
        count = count if count is not None else counts.get(first) if first is not None else None
        later = [s for s in starts if first is not None and s > first]
        end = min(later) if later else (first + count if first is not None and count is not None else None)
        ends.append(end)
    if not ends or any(e is None or e != int(e) for e in ends) or any(b <= a for a, b in zip(ends, ends[1:], strict=False)):
        return  # block numbers stand
    base = stops[0][1] or 0.0  # the counter before the first block (epochs count from 1, samples from 0)
    for (event, _first, _count), end in zip(stops, ends, strict=True):
        event.step = int(end - base)
    stops[0][0].mode = COUNTED_FROM_START


def _span(first: dict[str, int], last: dict[str, int], start: str, stop: str) -> int | None:
    if start in first and stop in last:
        return last[stop] - first[start]
    return None
