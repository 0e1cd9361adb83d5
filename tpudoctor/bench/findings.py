"""The bench outcome as findings, in the same shape as check results.

``BENCH-001`` is the throughput gate against the baseline and ``BENCH-002`` says whether the
model learned (a model whose loss does not drop gives no meaningful throughput). Both hold for
the whole run, so their scope is empty; ``step`` is None because they are outside the triage chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.bench.gate import NOISIER_FACTOR, busy_share
from tpudoctor.findings import Finding, FindingKind, Remediation, Severity, Status

GATE_ID = "BENCH-001"
GATE_TITLE = "throughput vs baseline"
TRAINING_ID = "BENCH-002"
TRAINING_TITLE = "loss drops"


def bench_findings(document: Mapping[str, Any]) -> list[Finding]:
    return [gate_finding(document), training_finding(document)]


def gate_finding(document: Mapping[str, Any]) -> Finding:
    """FAIL on a regression; WARN when a drop beyond tolerance is within noise or the keys differ; else PASS."""
    comparison = document.get("comparison")
    model = document["key"]["model"]
    if not comparison:
        return _finding(GATE_ID, GATE_TITLE, Status.SKIP, Severity.INFO, "no baseline to compare with",
                        skip_reason="no --baseline given")
    g = comparison["gate"]
    mismatches = comparison.get("key_mismatches") or []
    p_value = g["p_value_slower"] if g["ratio"] < 1 else g["p_value_faster"]
    evidence: dict[str, Any] = {
        "baseline_file": comparison["baseline_file"],
        "baseline_median_examples_per_s": g["baseline_median"],
        "current_median_examples_per_s": g["current_median"],
        "change_pct": round(g["change_pct"], 3),
        "ratio_ci_99": [g["ratio_ci_low"], g["ratio_ci_high"]],
        "tolerance_pct": g["tolerance"] * 100,
        "p_value": p_value,
        "alpha": g["alpha"],
        "windows": {"baseline": g["n_baseline"], "current": g["n_current"]},
        "verdict": g["verdict"],
    }
    if "cv_current" in g:  # documents written before 1.1 have no noise figures
        evidence["cv_pct"] = {"baseline": round(g["cv_baseline"] * 100, 3), "current": round(g["cv_current"] * 100, 3)}
        evidence["noise_ratio"] = g["noise_ratio"]
        evidence["noise_tolerance_pct"] = round(g["noise_tolerance"] * 100, 3)
    if g.get("busy_share_increase") is not None:
        evidence["busy_share_increase_pct"] = round(g["busy_share_increase"] * 100, 1)
    steady = document["measurement"].get("steady_state")
    if steady:
        evidence["warmup_windows_dropped"] = steady["dropped_windows"]
    if mismatches:
        evidence["key_mismatches"] = {m["field"]: {"baseline": m["baseline"], "current": m["current"]}
                                      for m in mismatches}
    confirmation = comparison.get("confirmation")
    again = [run["gate"] for run in confirmation["runs"]] if confirmation else []
    if confirmation:
        evidence["confirmation_runs_change_pct"] = [round(run["change_pct"], 3) for run in again]
        evidence["confirmation_runs_asked"] = confirmation["runs_asked"]
    figures = (f"median {g['current_median']:,.1f} vs {g['baseline_median']:,.1f} examples/s "
               f"({g['change_pct']:+.1f}%)")
    repeats = max(2 * int(g["n_current"]), 12)
    if g["verdict"] == "regression":
        shown = ", ".join(f"{run['change_pct']:+.1f}%" for run in again)
        held = f"; it held on {len(again)} fresh run(s) ({shown})" if again else ""
        unconfirmed = ("; a confirmation run was asked but did not finish" if confirmation and
                       len(again) < confirmation["runs_asked"] else "")
        return _finding(
            GATE_ID, GATE_TITLE, Status.FAIL, Severity.HIGH,
            f"throughput regressed: {figures}, beyond the {g['tolerance'] * 100:g}% tolerance and significant "
            f"(one-sided Mann-Whitney p={p_value:.2g} < alpha {g['alpha']:g}){held}{unconfirmed}",
            evidence=evidence,
            remediation=Remediation(
                text="Profile a window of this run and compare it with a profile of the baseline's version to see "
                     "which part of the step got slower.",
                commands=(f"tpudoctor bench --model {model} --repeats {g['n_current']} --profile ./bench-profile",
                          "tpudoctor profile analyze ./bench-profile",
                          "tpudoctor compare BASELINE_PROFILE ./bench-profile"),
            ),
        )
    undecided = _undecided_words(document, comparison, figures, p_value, again)
    if undecided is not None:
        message, advice = undecided
        return _finding(
            GATE_ID, GATE_TITLE, Status.WARN, Severity.MEDIUM, message, evidence=evidence,
            remediation=Remediation(text=advice, commands=(
                f"tpudoctor bench --model {model} --repeats {repeats} --baseline {comparison['baseline_file']}",)),
        )
    if mismatches:
        fields = ", ".join(m["field"] for m in mismatches)
        return _finding(
            GATE_ID, GATE_TITLE, Status.WARN, Severity.LOW,
            f"no regression ({figures}), but the baseline was recorded under a different key ({fields}), so the "
            f"numbers are only roughly comparable",
            evidence=evidence,
            remediation=Remediation(
                text="Record a baseline for this configuration and gate against it.",
                commands=(f"tpudoctor bench --model {model} --repeats {repeats} --save-baseline baseline.json",),
            ),
        )
    words = "improved" if g["verdict"] == "improvement" else "no significant drop"
    noise = (f"; the machine was {_times(g['noise_ratio'])} noisier than the baseline's (CV "
             f"{g['cv_current'] * 100:.1f}% vs {g['cv_baseline'] * 100:.1f}%)") if g.get("noisier") else ""
    if g.get("noise_ratio") is not None and g["noise_ratio"] * NOISIER_FACTOR < 1:  # the baseline was the noisy one
        noise = (f"; the baseline's windows were {1 / g['noise_ratio']:.1f}x noisier than this run's (CV "
                 f"{g['cv_baseline'] * 100:.1f}% vs {g['cv_current'] * 100:.1f}%), so only a large drop could "
                 f"show: record the baseline again on a quiet machine")
    return _finding(GATE_ID, GATE_TITLE, Status.PASS, Severity.INFO, f"throughput {words}: {figures}{noise}",
                    evidence=evidence)


def _undecided_words(document: Mapping[str, Any], comparison: Mapping[str, Any], figures: str, p_value: float,
                     again: list[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(message, advice) for a drop beyond tolerance that the gate could not call, by why; None otherwise.
    Every such drop has the same way out: time it again, with more windows."""
    g = comparison["gate"]
    tolerance = f"{g['tolerance'] * 100:g}% tolerance"
    shown = ", ".join(f"{run['change_pct']:+.1f}%" for run in again)
    more_windows = "Time more windows so that a real drop can reach significance."
    reason = g.get("unknown_reason") if g["verdict"] == "unknown" else None
    if reason == "not_reproduced":
        return (f"unknown: {figures} is beyond the {tolerance} (p={p_value:.2g}), but a fresh run timed to confirm "
                f"it gave {shown}: the drop did not reproduce, so the machine was likely slower during the first "
                f"run (another VM, a busy neighbour), not the code",
                "Nothing to fix if reruns stay at the baseline; a drop that comes back on most runs is a "
                "regression: time more runs to tell.")
    if reason == "not_significant":
        return (f"unknown: {figures} (p={p_value:.2g}); the runs timed to confirm it gave {shown}, still beyond the "
                f"{tolerance} but not significant: the windows vary too much to tell", more_windows)
    if reason == "busier":
        return (f"unknown: other processes took {_busy(document, comparison)} of the machine's CPU: {figures} is "
                f"beyond the {tolerance} (p={p_value:.2g}) but within what that extra load can explain, so it may "
                f"be the machine, not the code",
                "Rerun when the machine is quiet (or pin the run to idle cores); a drop that stays is a regression.")
    if g["verdict"] == "unknown":  # significant and beyond tolerance, but within the machine's extra noise
        return (f"unknown: the machine was {_times(g['noise_ratio'])} noisier than the baseline's (CV of the windows "
                f"{g['cv_current'] * 100:.1f}% vs {g['cv_baseline'] * 100:.1f}%): {figures} is beyond the "
                f"{tolerance} (p={p_value:.2g}) but within the {g['noise_tolerance'] * 100:.1f}% that the extra "
                f"noise allows, so it may be the machine, not the code",
                "Rerun on a machine without a busy neighbour (or pin the run to idle cores); a drop that stays is a "
                "regression.")
    if g["ratio"] < 1 - g["tolerance"]:  # dropped beyond tolerance, but the windows are too noisy to say so
        return (f"throughput may have dropped: {figures}, beyond the {tolerance} but not significant "
                f"(p={p_value:.2g} >= alpha {g['alpha']:g}); the windows vary too much to tell", more_windows)
    return None


def _busy(document: Mapping[str, Any], comparison: Mapping[str, Any]) -> str:
    """"38% ... (baseline: 2%)" in words, from the gate's recorded increase and this run's share."""
    current = busy_share(document["measurement"])
    increase = comparison["gate"]["busy_share_increase"]
    if current is None:  # the gate saw both shares; a document edited since may not hold this run's
        return f"{increase * 100:.0f} points more of it than during the baseline's"
    return f"{current * 100:.0f}% during this run vs {(current - increase) * 100:.0f}% during the baseline's"


def _times(ratio: float | None) -> str:
    return "far" if ratio is None else f"{ratio:.1f}x"


def training_finding(document: Mapping[str, Any]) -> Finding:
    m = document["measurement"]
    evidence = {"loss_start": m["loss_start"], "loss_end": m["loss_end"]}
    if m["loss_dropped"]:
        return _finding(TRAINING_ID, TRAINING_TITLE, Status.PASS, Severity.INFO,
                        f"loss {m['loss_start']:.4g} -> {m['loss_end']:.4g}", evidence=evidence)
    model = document["key"]["model"]
    return _finding(
        TRAINING_ID, TRAINING_TITLE, Status.FAIL, Severity.HIGH,
        f"the loss of {model} did not drop ({m['loss_start']:.4g} -> {m['loss_end']:.4g}): the model is not "
        f"learning, so its throughput means nothing",
        evidence=evidence,
        remediation=Remediation(
            text="A reference model that does not learn points at the runtime, not at the model: check the "
                 "framework/runtime compatibility and run the reference model check.",
            commands=("tpudoctor check --step 3 --step 5",),
        ),
    )


def _finding(id_: str, title: str, status: Status, severity: Severity, message: str, *,
             evidence: dict[str, Any] | None = None, remediation: Remediation | None = None,
             skip_reason: str | None = None) -> Finding:
    return Finding(id=id_, step=None, title=title, status=status, message=message, severity=severity,
                   evidence=evidence or {}, remediation=remediation, skip_reason=skip_reason,
                   kind=FindingKind.BENCH)
