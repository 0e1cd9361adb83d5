"""Plain-text lines for the diagnosis part of a profile report (used by the text renderer)."""

from __future__ import annotations

BREAKDOWN_PARTS = ("compute", "collective", "input", "idle", "compile", "host_callback", "host_offload", "other")


def fixes(finding: dict) -> list[str]:
    """A finding's fixes (its remediation text, one per line) and then its commands."""
    remediation = finding.get("remediation") or {}
    lines = [line for line in (remediation.get("text") or "").splitlines() if line.strip()]
    return lines + [f"$ {c}" for c in remediation.get("commands") or []]


def where(finding: dict, doc: dict | None = None) -> str:
    """'' for the whole job (or a one-host capture: ``doc``), else 'on hosts a, b' (hosts, then workers,
    then chips)."""
    if doc is not None and len(doc.get("hosts") or []) <= 1:
        return ""
    scope = finding.get("scope") or {}
    for key in ("hosts", "workers", "chips"):
        names = scope.get(key) or []
        if names:
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            return f"on {key[:-1]}{'s' if len(names) > 1 else ''} {shown}"
    return ""


def confidence_line(confidence: dict) -> str:
    """'medium - why; why' for a confidence document (level, reasons, basis)."""
    reasons = "; ".join(confidence.get("reasons") or [])
    return f"{confidence.get('level', 'unknown')}" + (f" - {reasons}" if reasons else "")


def steps_line(st: dict) -> str:
    """How the steps were found; for a micro-benchmark, that there are none and which program leads."""
    if st.get("micro_benchmark"):
        return (f"Steps: none: micro-benchmark, no training loop (program with the most device time: "
                f"{st.get('program')})")
    return (f"Steps: {st.get('count', 0)} found by {st.get('method')}"
            + (f" (program {st.get('program')})" if st.get("program") else ""))


def op_category(op: dict) -> str:
    """An op's HLO category; for device work of no program, what it is instead."""
    kind = op.get("kind") or "hlo-op"
    if kind == "runtime-copy":
        return "(runtime copy)"
    if kind == "other":
        return op.get("category") or "(no HLO op)"
    return op.get("category") or ""


def device_time_split(device_ops: dict) -> str:
    """'HLO ops 27.55 ms, runtime copies 0.56 ms, other device work 0.02 ms' (reports before 2.2: '')."""
    if "hlo_op_ms" not in device_ops:
        return ""
    return (f"HLO ops {device_ops['hlo_op_ms']:,.3f} ms, runtime copies {device_ops.get('runtime_copy_ms') or 0:,.3f} ms, "
            f"other device work {device_ops.get('other_op_ms') or 0:,.3f} ms")


def _ms(value) -> str:
    return "-" if value is None else f"{value:.4g} ms"


def diagnosis_lines(doc: dict) -> list[str]:
    if "verdict" not in doc:
        return []
    k = doc.get("kpis", {})
    lines = [f"Verdict: {doc['verdict'].upper()} - {doc.get('verdict_reason', '')}"]
    confidence = doc.get("verdict_confidence")
    if confidence:
        lines.append(f"  confidence: {confidence_line(confidence)}")
    lines.append("")
    st = doc.get("steps", {})
    stats = st.get("stats") or {}
    lines.append(steps_line(st))
    if stats:
        lines.append(f"  step time mean {stats['mean_ms']:.2f} ms, median {stats['median_ms']:.2f}, "
                     f"p90 {stats['p90_ms']:.2f}, min {stats['min_ms']:.2f}, max {stats['max_ms']:.2f}")
    pct = doc.get("breakdown", {}).get("percent", {})
    if pct and st.get("count"):
        lines.append("  breakdown: " + ", ".join(f"{p} {pct.get(p, 0) or 0:.1f}%" for p in BREAKDOWN_PARTS))
    lines.append(f"  device duty cycle {k.get('duty_cycle_percent') or 0:.1f}%, compiles in window "
                 f"{k.get('compile_count', 0)} ({k.get('compile_ms') or 0:.1f} ms)"
                 + (f", MFU {k['mfu_percent']:.3g}%" if k.get("mfu_percent") is not None else ""))
    lines.append("")
    for f in doc.get("findings", []):
        lines.append(f"[{f['severity'].upper()}] {f['id']}: {f['title']}" + (f" ({where(f, doc)})" if where(f, doc) else ""))
        lines.append(f"    {f['message']}")
        if f.get("confidence"):
            lines.append(f"    confidence: {confidence_line(f['confidence'])}")
        for fix in fixes(f)[:5]:
            lines.append(f"    fix: {fix}")
    funcs = doc.get("recompilation", {}).get("functions", [])
    if funcs:
        lines += ["", "Compilations in the window:"]
        for fn in funcs[:10]:
            lines.append(f"  {fn['function']:<40} x{fn['compile_count']:<4} {fn['compile_ms']:>10.1f} ms "
                         f"{fn['share_of_capture_percent']:>6.1f}%")
    programs = doc.get("device_ops", {}).get("programs") or []
    if programs:
        lines += ["", "Programs by device time (" + device_time_split(doc.get("device_ops", {})) + "):"]
        for p in programs[:10]:
            lines.append(f"  {str(p['program'])[:36]:<36} runs {p['runs']:<5} on {p['devices']:<3} device(s) "
                         f"{p['device_ms']:>11.3f} ms  mean {_ms(p.get('mean_ms')):>10}  {p['share_percent']:>5.1f}%")
    ops = doc.get("device_ops", {}).get("top_ops", [])
    if ops:
        lines += ["", "Top device ops by self time (one row per program and op):"]
        for op in ops[:10]:
            lines.append(f"  {str(op.get('program') or '-')[:20]:<20} {str(op['name'])[:36]:<36} {op_category(op)[:14]:<14} "
                         f"x{op['count']:<5} {op['self_ms']:>9.2f} ms {op['self_percent']:>5.1f}%")
    from tpudoctor.reports.roofline_view import roofline_lines

    roofline = roofline_lines(doc)
    if roofline:
        lines += ["", *roofline]
    host = doc.get("host_ops", {}).get("table", [])
    if host:
        lines += ["", "Host-side ops:"]
        for row in host[:10]:
            lines.append(f"  {row['kind']:<20} {str(row['name'])[:40]:<40} x{row['count']:<5} "
                         f"{row['total_ms']:>10.2f} ms {row['share_percent']:>6.1f}% of {row['share_of']}")
    if doc.get("straggler"):
        lines += ["", straggler_line(doc["straggler"])]
    elif (doc.get("cross_host") or {}).get("straggler_test"):
        lines += ["", "Straggler: none. " + doc["cross_host"]["straggler_test"]["decided_by"]]
        lines += [f"  but {line}" for line in _priced_since(doc)]
    return lines


def _priced_since(doc: dict) -> list[str]:
    """The hosts the what-if prices whose slowness began mid-run (over the whole capture they need not
    arrive last beyond noise)."""
    whatif = (doc.get("analyses") or {}).get("straggler_whatif") or {}
    return [f"the what-if finds {r['host']} persistently slow since step {r['onset_step']} "
            f"({float(r.get('persistent_saved_ms') or 0):.2f} ms per step to save)"
            for r in whatif.get("per_host") or [] if r.get("priced") and r.get("onset_step") is not None]


def straggler_line(s: dict) -> str:
    """One line for the straggler; reports saved before the collective analysis have only the slowdown."""
    if s.get("delay_ms_median") is None:
        return f"Straggler: {s['host']} ({s['slowdown_percent']:.1f}% slower than the median host)"
    return (f"Straggler: {s['host']} arrives {s['delay_ms_median']:.2f} ms late at the collective per step "
            f"(last in {s['last_arrival_steps']} of {s['steps_compared']} steps); the other hosts wait "
            f"{s.get('others_wait_ms_per_step') or 0:.2f} ms per step for it")
