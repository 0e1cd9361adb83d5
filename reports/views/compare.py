"""The view of ``tpudoctor compare``'s three documents: two profiles, a profile against its history, two goodput
reports. Comparability comes first; then the KPIs (or figures), the op-level diff, and the gate's finding, the
one the exit status is judged on (``CompareReport.results``), so JUnit fails exactly when the run does."""

from __future__ import annotations

from typing import Any

from tpudoctor.profile.compare_report import GOODPUT_COMPARE, PROFILE_HISTORY, CompareReport
from tpudoctor.reports.view import Section, Suite, Table, View, figure, properties

MOVERS_SHOWN = 10
RATE_LABELS = {"flop_rate_flops_per_s": ("FLOP rate", 1e9, "GFLOP/s"),
               "hbm_bw_bytes_per_s": ("HBM bw", 1e9, "GB/s"),
               "memory_bw_bytes_per_s": ("memory bw", 1e9, "GB/s")}
IDENTITY_FIELDS = ("device_type", "device_kind", "n_hosts", "n_devices", "topology", "framework", "framework_version",
                   "libtpu_version", "step_method", "step_program")
ARROWS = {"better": "better", "worse": "WORSE", "same": "same", "n/a": "n/a"}
HISTORY_WORDS = {"regression": "REGRESSION", "improvement": "better", "no_change": "ok", "not_judged": "not judged"}


def _v(x: Any, sign: str = "") -> str:
    """Two decimals, or three significant figures for a small non-zero figure (an MFU of 0.000487 % is not 0.00)."""
    if x is None:
        return "n/a"
    if not isinstance(x, float):
        return f"{x:{sign}}" if sign else str(x)
    return f"{x:{sign}.3g}" if 0 < abs(x) < 0.01 else f"{x:{sign},.2f}"


def _delta(row: dict[str, Any]) -> str:
    if row["delta"] is None:
        return "n/a"
    pct = f" ({row['delta_percent']:+.1f}%)" if row["delta_percent"] is not None else ""
    return f"{_v(float(row['delta']), '+')}{pct}"


def _ms(ps: float | None) -> str:
    return "n/a" if ps is None else f"{ps / 1e9:,.3f}"


def comparability_lines(result: dict[str, Any]) -> list[str]:
    """Comparable or not and why, the differences noted, the fields not stated by both."""
    c = result.get("comparability") or {}
    if not c:
        return []
    if c.get("comparable", True):
        lines = ["Comparable: same device type, kind, device count and host layout"
                 if not c.get("unknown_fields") else "Comparable as far as both state"]
    else:
        forced = " (--force: judged anyway)" if result.get("forced") else ""
        lines = [f"NOT COMPARABLE{forced}: " + "; ".join(c.get("reasons") or [])]
    lines += [f"note: {n}" for n in c.get("notes") or []]
    if c.get("unknown_fields"):
        lines.append("not stated by both, so not compared: " + ", ".join(c["unknown_fields"]))
    return lines


def _comparability(result: dict[str, Any]) -> Section | None:
    lines = comparability_lines(result)
    if not lines:
        return None
    c = result.get("comparability") or {}
    a, b = c.get("baseline") or {}, c.get("candidate") or {}
    rows = tuple((f, _v(a.get(f)), _v(b.get(f))) for f in IDENTITY_FIELDS
                 if a.get(f) is not None or b.get(f) is not None)
    table = Table(("", "baseline", "candidate"), rows,
                  marked_rows=frozenset(i for i, (_, x, y) in enumerate(rows) if x != y)) if rows else None
    return Section("Comparability", notes=tuple(lines), table=table)


def _rates(row: dict[str, Any], names: list[str]) -> str:
    parts = []
    for rate in names:
        label, scale, unit = RATE_LABELS.get(rate, (rate, 1.0, ""))
        if (d := row.get(f"delta_{rate}")) is not None:
            parts.append(f"{label} {d / scale:+,.2f} {unit}")
    return ", ".join(parts)


def _ops(result: dict[str, Any]) -> Section | None:
    diff = result.get("op_diff")
    if diff is None:
        return Section("Ops", notes=(f"Op-level diff: {result.get('op_diff_note') or 'not available'}",)) \
            if "op_diff" in result else None
    counts = diff["counts"]
    basis, unit = ("ms per step", "ms/step") if diff["time_basis"] == "per-step" else ("ms in the capture", "ms")
    notes = [f"Op-level diff ({basis}): {counts['added']} added, {counts['removed']} removed, {counts['slower']} "
             f"slower, {counts['faster']} faster; device op time {_ms(diff['baseline_time_ps'])} -> "
             f"{_ms(diff['candidate_time_ps'])}"]
    if result.get("op_diff_note"):
        notes.append(f"note: {result['op_diff_note']}")
    if not diff["movers"]:
        return Section("Ops", notes=(*notes, "no op moved"))
    rates = diff.get("rates") or []
    rows = tuple((str(o["op_name"]), o["status"], _ms(o["baseline_time_ps"]), _ms(o["candidate_time_ps"]),
                  f"{(o['delta_time_ps'] or 0) / 1e9:+,.3f}",
                  figure(o["delta_avg_time_percent"], "+.1f", "n/a", "%") if o["status"] not in ("added", "removed") else "",
                  _rates(o, rates), str(o.get("program") or "-")) for o in diff["movers"][:MOVERS_SHOWN])
    table = Table(("op (top movers by absolute time)", "status", f"baseline {unit}", f"candidate {unit}", "delta ms",
                   "avg", "rate deltas", "program"), rows, align="llrrrrll")
    return Section("Ops", notes=tuple(notes), table=table)


def _verdict_line(result: dict[str, Any]) -> str:
    if result["threshold_percent"] is None:
        return ""
    if not result.get("comparable", True) and not result.get("forced"):
        return f"not judged against {result['threshold_percent']:g}%: the captures are not comparable"
    if result["regressed"]:
        return f"REGRESSION beyond {result['threshold_percent']:g}%: {', '.join(result['regressed_by'])}"
    return f"no regression beyond {result['threshold_percent']:g}%"


def _history_verdict(gate: dict[str, Any]) -> str:
    if gate["verdict"] == "regression":
        return "REGRESSION against the history: " + ", ".join(gate["regressed_by"])
    if gate["verdict"] == "not_judged":
        return "NOT JUDGED: too little history for every gated KPI"
    return (f"no significant regression (robust z beyond {gate['z_threshold']:g} and a change beyond "
            f"{gate['min_change_percent']:g}% / {gate['min_change_points']:g} points needed)")


def _history_kpis(gate: dict[str, Any]) -> Section:
    rows = []
    for j in gate["kpis"]:
        change = (f"{j['change_percent']:+.1f}%" if j.get("change_percent") is not None and not j["in_points"]
                  else (f"{j['change']:+.2f} pt" if j.get("change") is not None else "n/a"))
        z = f"{j['robust_z']:+.1f}" if j.get("robust_z") is not None else "n/a"
        rows.append((j["kpi"] + (" (gated)" if j["gated"] else ""), HISTORY_WORDS.get(j["verdict"], j["verdict"]),
                     _v(j.get("candidate")), _v(j.get("history_median")), change, z, j["reason"]))
    return Section("KPIs", table=Table(("KPI", "verdict", "candidate", "history median", "change", "robust z",
                                        "reason"), tuple(rows), align="llrrrrl",
                                       marked_rows=frozenset(i for i, j in enumerate(gate["kpis"])
                                                             if j["verdict"] == "regression")))


def _goodput_verdict(result: dict[str, Any]) -> str:
    if not result["comparable"]:
        return "not comparable: " + "; ".join(result["comparability"]["reasons"])
    if result["regressed"]:
        return f"REGRESSION: {', '.join(result['regressed_by'])} worse by more than {result['threshold_points']} pt"
    delta = next(r for r in result["figures"] if r["figure"] == "ettr")["delta"]
    return f"ETTR {result['baseline']['ettr']} -> {result['candidate']['ettr']} ({'+' if (delta or 0) >= 0 else ''}{delta})"


def _goodput_value(x: Any) -> str:
    return "n/a" if x is None else f"{x:,.3f}" if isinstance(x, float) else str(x)


def view(result: dict[str, Any]) -> View:
    report = CompareReport(result)
    findings = tuple(report.results)
    kind = report.kind
    if kind == GOODPUT_COMPARE:
        notes: tuple[str, ...] = (f"goodput: baseline {', '.join(result['baseline']['sources'])} vs candidate "
                 f"{', '.join(result['candidate']['sources'])}",)
        rows = tuple((r["figure"], _goodput_value(r["baseline"]), _goodput_value(r["candidate"]),
                      _goodput_value(r["delta"]), r["direction"]) for r in result["figures"])
        body = [Section("Figures", table=Table(("figure", "baseline", "candidate", "delta", ""), rows, align="lrrrl"))]
        verdict, suite_name, classname = _goodput_verdict(result), "tpudoctor compare (goodput)", "tpudoctor.goodput.compare"
        sources = (("baseline", ", ".join(result["baseline"]["sources"])),
                   ("candidate", ", ".join(result["candidate"]["sources"])))
    elif kind == PROFILE_HISTORY:
        gate = result["gate"]
        notes = (f"candidate {result['candidate']['source']} ({result['candidate']['verdict']})",
                 f"history   {result['history']}: last {gate['n_history']} report(s) (--last {gate['last_n']})")
        body = [_comparability(result), _history_kpis(gate)]
        verdict, suite_name, classname = _history_verdict(gate), "tpudoctor compare --history", "tpudoctor.profile.compare"
        sources = (("candidate", result["candidate"]["source"]), ("history", result["history"]))
    else:
        notes = (f"baseline  {result['baseline']['source']} ({result['baseline']['verdict']})",
                 f"candidate {result['candidate']['source']} ({result['candidate']['verdict']})")
        kpis = tuple((r["kpi"], _v(r["baseline"]), _v(r["candidate"]), _delta(r), ARROWS.get(r["direction"], r["direction"]))
                     for r in result["kpis"])
        body = [_comparability(result), Section("KPIs", table=Table(("KPI", "baseline", "candidate", "delta", ""), kpis,
                                                                      align="lrrrl")), _ops(result)]
        verdict, suite_name, classname = _verdict_line(result), "tpudoctor compare", "tpudoctor.profile.compare"
        sources = (("baseline", result["baseline"]["source"]), ("candidate", result["candidate"]["source"]))
    sections = (*body, Section("Verdict", notes=(verdict,) if verdict else (), findings=findings))  # View drops None
    suite = Suite(suite_name, classname, properties=properties((
        *sources, ("comparable", str(result.get("comparable", True)).lower()), ("forced", result.get("forced")))),
        summary="\n".join([*(comparability_lines(result) if kind != GOODPUT_COMPARE else []), verdict]))
    return View("compare", "tpudoctor compare", notes, sections, findings, suite)
