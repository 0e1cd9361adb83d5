"""Example facts for the log checks, built by the real diagnoser so they stay truthful."""

from __future__ import annotations

from typing import Any

from tpudoctor.logdiag import Diagnoser

HEALTHY_LINES = (
    "2024-05-01 10:00:00,001 INFO trainer.py:40] step 100 loss=2.3012",
    "I0501 10:00:01.000000  4242 tpu_runtime.cc:118] Found 8 TPU v5 lite chips.",
)


def scan_with(*lines: str, source: str = "train.log") -> dict[str, Any]:
    diagnoser = Diagnoser()
    diagnoser.feed_lines(list(HEALTHY_LINES) + list(lines), source)
    return {
        "sources": [{"source": source, "lines": diagnoser.lines_scanned}],
        "lines_scanned": diagnoser.lines_scanned,
        "events_scanned": diagnoser.events_scanned,
        "catalog_version": diagnoser.catalog.version,
        "diagnoses": [d.to_dict() for d in diagnoser.diagnoses()],
    }


def healthy_scan() -> dict[str, Any]:
    return scan_with()
