"""Pieces every goodput renderer shares: bucket labels and colours, the headline, plain lines for figures."""

from __future__ import annotations

from typing import Any

BUCKET_LABELS = {
    "PRODUCTIVE": "productive steps",
    "TPU_INITIALIZATION": "TPU initialisation",
    "TRAINING_PREP": "training preparation",
    "PROGRAM_STARTUP": "compilation / first step",
    "DATA_LOADING_SYNC": "waiting for data",
    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": "checkpoint saves (blocking)",
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": "checkpoint restores",
    "WASTED_PROGRESS_FROM_DISRUPTION": "steps redone after a restart",
    "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": "down between failure and restart",
    "OTHER": "other",
}
BUCKET_COLORS = {
    "PRODUCTIVE": "#2e7d32", "TPU_INITIALIZATION": "#5d4037", "TRAINING_PREP": "#8d6e63",
    "PROGRAM_STARTUP": "#6a1b9a", "DATA_LOADING_SYNC": "#c62828", "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": "#ef6c00",
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": "#f9a825", "WASTED_PROGRESS_FROM_DISRUPTION": "#ad1457",
    "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": "#263238", "OTHER": "#9e9e9e",
}


def seconds_text(s: float | None) -> str:
    if s is None:
        return "unknown"
    s = float(s)
    if s >= 3600:
        return f"{s / 3600:.2f} h"
    if s >= 120:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def headline(doc: dict[str, Any]) -> str:
    g = doc["goodput"]
    if g.get("ettr") is None:
        why = (g.get("nulls") or {}).get("ettr") or "unknown"
        return f"ETTR unknown: {why}"
    if (g.get("consistency") or {}).get("unsupported"):
        return (f"ETTR {g['ettr']:.3f} not supported: the log's times contradict each other, so the figures below "
                f"are not usable ({seconds_text(g['wall_s'])} of wall time as read)")
    return (f"ETTR {g['ettr']:.3f}: {g['goodput_percent']:.1f}% of {seconds_text(g['wall_s'])} went to productive "
            f"steps ({seconds_text(g['productive_s'])})")


def step_line(g: dict[str, Any]) -> str:
    if g.get("steps") is None:
        return "No step lines."
    span = f" ({g['first_step']} to {g['last_step']})" if g.get("first_step") is not None else ""
    parts = [f"{g['steps']} step(s){span}",
             f"{g['restarts']} restart(s)", f"{g['repeated_steps']} step(s) done again",
             f"{g['checkpoint_saves']} checkpoint save(s) ({g.get('checkpoint_saves_sync', 0)} sync, "
             f"{g.get('checkpoint_saves_async', 0)} async)"]
    if g.get("median_step_s") is not None:
        parts.append(f"median step {g['median_step_s']:.3f} s (from {g.get('step_time_source')})")
    return "; ".join(parts) + "."


def bucket_rows(g: dict[str, Any]) -> list[dict[str, Any]]:
    """Productive first, then the badput buckets, each with seconds, percent and a note."""
    wall = g.get("wall_s")
    rows = [{"bucket": "PRODUCTIVE", "label": BUCKET_LABELS["PRODUCTIVE"], "seconds": g.get("productive_s"),
             "percent": g.get("goodput_percent"), "note": (g.get("nulls") or {}).get("productive_s", "")}]
    for name, entry in (g.get("badput") or {}).items():
        note = entry.get("reason") or ("estimated from step intervals" if entry.get("estimated") else "")
        if name == "OTHER" and entry.get("parts"):
            note = "; ".join(f"{k}: {seconds_text(v)}" for k, v in entry["parts"].items())
        rows.append({"bucket": name, "label": BUCKET_LABELS.get(name, name), "seconds": entry.get("seconds"),
                     "percent": entry.get("percent"), "note": note if wall is not None or entry.get("reason")
                     else note})
    return rows


def gate_line(doc: dict[str, Any]) -> str | None:
    gate = doc.get("gate")
    if not gate:
        return None
    verdict = {"passed": "PASSED", "failed": "FAILED", "not_judged": "NOT JUDGED"}[gate["verdict"]]
    return f"--min-ettr {gate['min_ettr']}: {verdict} ({gate['reason']})"


def fixes(finding: dict[str, Any]) -> list[str]:
    rem = finding.get("remediation") or {}
    return [line for line in (rem.get("text") or "").splitlines() if line.strip()]
