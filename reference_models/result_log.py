"""Structured result lines, ``:::TPUDOCTOR {json}``, in the manner of MLPerf's ``:::MLLOG``.

The reference run prints them on stdout; ``tpudoctor bench`` and step 5 parse them instead of
scraping human text. Stdlib only, so parsing never imports a framework.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

PREFIX = ":::TPUDOCTOR"

# Event keys, in the order a run emits them.
RUN_START = "run_start"
COMPILE = "compile"
WARMUP = "warmup"
WINDOW = "window"
PROFILE = "profile"
RUN_RESULT = "run_result"
RUN_ERROR = "run_error"

POINT_IN_TIME = "POINT_IN_TIME"
INTERVAL_END = "INTERVAL_END"


def format_event(key: str, value: Any, *, event_type: str = POINT_IN_TIME, metadata: dict[str, Any] | None = None) -> str:
    record = {
        "key": key,
        "value": value,
        "event_type": event_type,
        "time_ms": round(time.time() * 1000.0, 3),
        "metadata": metadata or {},
    }
    return f"{PREFIX} {json.dumps(record, sort_keys=True, allow_nan=False)}"


def emit(key: str, value: Any, *, event_type: str = POINT_IN_TIME, metadata: dict[str, Any] | None = None,
         stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    out.write(format_event(key, value, event_type=event_type, metadata=metadata) + "\n")
    out.flush()


def parse_line(line: str) -> dict[str, Any] | None:
    """The event on this line, or None for any other line (including a corrupt result line)."""
    start = line.find(PREFIX)
    if start < 0:
        return None
    try:
        record = json.loads(line[start + len(PREFIX):].strip())
    except ValueError:
        return None
    return record if isinstance(record, dict) and "key" in record else None


def parse_events(lines: Iterable[str] | str) -> list[dict[str, Any]]:
    if isinstance(lines, str):
        lines = lines.splitlines()
    return [event for event in map(parse_line, lines) if event is not None]
