"""The bench report's view: the run's throughput in one line, the verdict against the baseline (its figures as a
before/after table, asv-style), the run's own figures and key, the findings (BENCH-001 the gate, BENCH-002 the
loss); in JUnit one testcase per finding, the model's key as properties."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.reports.view import Section, Suite, Table, View, findings_of, properties

VERDICT_WORDS = {"regression": "REGRESSION", "improvement": "improvement", "no_change": "no significant change"}
UNKNOWN_WHY = {"noisier": "the machine was noisier than the baseline's",
               "busier": "the machine was busier than the baseline's (other processes' load)",
               "not_reproduced": "the drop was gone on a fresh run",
               "not_significant": "a fresh run did not confirm the drop"}


def headline(doc: Mapping[str, Any]) -> str:
    key, m, device = doc["key"], doc["measurement"], doc["environment"]["device"]
    steady = m.get("steady_state")
    windows = (f"{steady['kept_windows']} steady windows of {m['steps_per_window']} steps, {_warmup_words(steady)}"
               if steady else f"{m['windows']} windows of {m['steps_per_window']} steps")
    return (f"{key['model']} on {device['device_kind']} x{device['device_count']}: {m['median']:,.1f} examples/s "
            f"(median of {windows}, global batch {key['global_batch_size']})")


def _warmup_words(steady: Mapping[str, Any]) -> str:
    dropped = steady["dropped_windows"]
    words = f"{dropped} warm-up window{'s' if dropped != 1 else ''} dropped"
    if steady.get("cv") is not None:
        words = f"CV {steady['cv'] * 100:.1f}%, {words}"
    if not steady["settled"]:
        words += f" (at most {steady['max_dropped_windows']}: the run may not have settled)"
    return words


def verdict_line(g: Mapping[str, Any]) -> str:
    p_value = g["p_value_slower" if g["ratio"] < 1 else "p_value_faster"]
    reason = g.get("unknown_reason") or "noisier"
    verdict = VERDICT_WORDS.get(g["verdict"]) or f"unknown ({UNKNOWN_WHY.get(reason, reason)})"
    line = (f"{verdict}: {'' if g['significant'] else '~'}{g['change_pct']:+.1f}% vs baseline "
            f"({g['current_median']:,.1f} vs {g['baseline_median']:,.1f} examples/s; tolerance {g['tolerance'] * 100:g}%, "
            f"one-sided Mann-Whitney p={p_value:.2g}, alpha {g['alpha']:g}; 99% CI of the ratio "
            f"{g['ratio_ci_low']:.3f}-{g['ratio_ci_high']:.3f})")
    if g.get("noisier"):
        times = "far" if g["noise_ratio"] is None else f"{g['noise_ratio']:.1f}x"
        line += (f"; the machine was {times} noisier than the baseline's (CV {g['cv_current'] * 100:.1f}% vs "
                 f"{g['cv_baseline'] * 100:.1f}%): a regression must exceed {g['noise_tolerance'] * 100:.1f}%")
    return line


def mismatch_lines(doc: Mapping[str, Any]) -> list[str]:
    return [f"{m['field']}: baseline {m['baseline']!r}, current {m['current']!r}"
            for m in (doc.get("comparison") or {}).get("key_mismatches", [])]


def _comparison(doc: Mapping[str, Any]) -> Section | None:
    if not doc.get("comparison"):
        return None
    g = doc["comparison"]["gate"]
    mismatches = mismatch_lines(doc)
    notes = [verdict_line(g), *(["compared across different keys (--allow-mismatch): " + "; ".join(mismatches)]
                                if mismatches else [])]
    table = Table(("metric", "baseline", "current", "ratio"), (("examples/s (median)", f"{g['baseline_median']:,.1f}",
                  f"{g['current_median']:,.1f}", f"{'' if g['significant'] else '~'}{g['ratio']:.3f}"),), align="lrrr")
    return Section("Against the baseline", notes=tuple(notes), table=table, marked=g["verdict"] == "regression")


def _run(doc: Mapping[str, Any]) -> Section:
    key, m = doc["key"], doc["measurement"]
    loss = f"{m['loss_start']:.4g} -> {m['loss_end']:.4g} ({'dropped' if m['loss_dropped'] else 'DID NOT DROP'})"
    rows = [("compile (first step)", f"{m['compile_time_ms']:,.0f} ms"),
            ("steady step time (median)", f"{m['step_time_ms_median']:.3f} ms"),
            ("windows (examples/s)", ", ".join(f"{s:,.0f}" for s in m["samples"])),
            ("loss", loss), ("model version", str(key["model_version"])),
            ("accelerator / topology", f"{key['accelerator_type']} / {key['topology'] or '-'}"),
            ("framework", f"{key['framework']} {key['framework_version']}"), ("libtpu", key["libtpu_version"] or "-"),
            ("versions", ", ".join(f"{k} {v}" for k, v in doc["environment"]["versions"].items() if v))]
    profile = doc.get("profile_dir")
    return Section("This run", table=Table(("figure", "value"), tuple(rows)), notes=(f"profile: {profile}",) if profile else (),
                   commands=(f"tpudoctor profile analyze {profile}",) if profile else ())


def view(doc: dict[str, Any]) -> View:
    findings = findings_of(doc)
    key, m = doc["key"], doc["measurement"]
    seconds = m["compile_time_ms"] / 1000.0 + m["windows"] * m["steps_per_window"] * m["step_time_ms_median"] / 1000.0
    sections = [_comparison(doc), _run(doc), Section("Findings", findings=findings)]
    suite = Suite("tpudoctor bench", f"tpudoctor.bench.{key['model']}", duration_s=seconds,
                  timestamp=doc["created_at"], hostname=str(doc["host"]), properties=properties(key.items()),
                  summary="\n".join([headline(doc), *mismatch_lines(doc)]))
    return View("bench", f"tpudoctor bench: {headline(doc)}", (), tuple(sections),
                findings, suite)
