"""Shared wording for the bench renderers: the verdict line and the key in words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VERDICT_WORDS = {
    "regression": "REGRESSION",
    "improvement": "improvement",
    "no_change": "no significant change",
    "unknown": "unknown (the machine was noisier than the baseline's)",
}


def headline(document: Mapping[str, Any]) -> str:
    key = document["key"]
    m = document["measurement"]
    steady = m.get("steady_state")
    windows = (f"{steady['kept_windows']} steady windows of {m['steps_per_window']} steps, "
               f"{_warmup_words(steady)}" if steady else f"{m['windows']} windows of {m['steps_per_window']} steps")
    return (f"{key['model']} on {document['environment']['device']['device_kind']} "
            f"x{document['environment']['device']['device_count']}: {m['median']:,.1f} examples/s "
            f"(median of {windows}, global batch {key['global_batch_size']})")


def _warmup_words(steady: Mapping[str, Any]) -> str:
    dropped = steady["dropped_windows"]
    words = f"{dropped} warm-up window{'s' if dropped != 1 else ''} dropped"
    if steady.get("cv") is not None:
        words = f"CV {steady['cv'] * 100:.1f}%, {words}"
    if not steady["settled"]:
        words += f" (at most {steady['max_dropped_windows']}: the run may not have settled)"
    return words


def verdict_line(document: Mapping[str, Any]) -> str | None:
    comparison = document.get("comparison")
    if not comparison:
        return None
    g = comparison["gate"]
    sign = "~" if not g["significant"] else ""
    return (f"{VERDICT_WORDS[g['verdict']]}: {sign}{g['change_pct']:+.1f}% vs baseline "
            f"({g['current_median']:,.1f} vs {g['baseline_median']:,.1f} examples/s; "
            f"tolerance {g['tolerance'] * 100:g}%, one-sided Mann-Whitney p={g['p_value_slower' if g['ratio'] < 1 else 'p_value_faster']:.2g}, "
            f"alpha {g['alpha']:g}; 99% CI of the ratio {g['ratio_ci_low']:.3f}-{g['ratio_ci_high']:.3f})"
            + _noise_words(g))


def _noise_words(g: Mapping[str, Any]) -> str:
    if not g.get("noisier"):
        return ""
    times = "far" if g["noise_ratio"] is None else f"{g['noise_ratio']:.1f}x"
    return (f"; the machine was {times} noisier than the baseline's (CV {g['cv_current'] * 100:.1f}% vs "
            f"{g['cv_baseline'] * 100:.1f}%): a regression must exceed {g['noise_tolerance'] * 100:.1f}%")


def loss_line(document: Mapping[str, Any]) -> str:
    m = document["measurement"]
    state = "dropped" if m["loss_dropped"] else "DID NOT DROP"
    return f"loss {m['loss_start']:.4g} -> {m['loss_end']:.4g} ({state})"


def mismatch_lines(document: Mapping[str, Any]) -> list[str]:
    comparison = document.get("comparison") or {}
    return [f"{m['field']}: baseline {m['baseline']!r}, current {m['current']!r}"
            for m in comparison.get("key_mismatches", [])]
