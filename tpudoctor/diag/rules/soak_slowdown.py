"""soak-slowdown: no chip slows down during the soak (r3)."""

from __future__ import annotations

from tpudoctor.diag import stats
from tpudoctor.diag.judging import longer
from tpudoctor.diag.remedies import chip_fault
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input, example_timings
from tpudoctor.findings import Finding, Severity, Status


class SoakSlowdown(DiagRule):
    """The r2 matmul repeated for the soak's length, cut into windows: a chip whose time over its peers' median
    exceeds its margin for two windows running has degraded mid-run (thermal, a failing HBM stack, a clock that
    drops): a FAIL from the window it began, even when its peak figure was as good as its peers' (which a
    peak-only test would pass)."""

    id = "soak-slowdown"
    title = "No chip slows down during the soak"
    measurement = "soak"
    docs = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html"
    examples = (Example("steady", example_input(8, level=3, soak=example_timings([1.0] * 8, reps=60)),
                            Status.PASS),
                Example("chip 2 slows from half-way",
                            example_input(8, level=3, soak=example_timings([1.0] * 8, reps=60,
                                                                          soak_slowdown=(2, 0.2, 0.5))), Status.FAIL))

    def evaluate(self, subject: DiagInput) -> Finding:
        soak = subject.soak
        assert soak is not None  # applies() ran this rule only where the level took its measurement
        frame = soak.frame
        table = stats.compare_peers(frame, soak.unit)
        count = stats.window_count(int(table["reps"].max()), subject.soak_windows)
        windows = stats.soak_windows(frame, count)
        onsets = stats.slowdown_onsets(windows)
        peak_ok = {subject.chip(d): round(float(row[f"{soak.unit}_max"]), 6) for d, row in table.iterrows()}
        evidence = {"windows": count, "reps": int(table["reps"].max()),
                    "duration_s": round(float(frame["at_s"].max()), 1), "peak_rate_per_chip": peak_ok}
        if frame["device"].nunique() < stats.MIN_PEERS:
            return self.judged(Status.PASS, Severity.INFO, "too few devices to compare during the soak",
                               evidence={**evidence, "confidence": "unknown",
                                         "confidence_why": f"a peer median needs {stats.MIN_PEERS} or more devices"},
                               host=subject.host)
        if not onsets:
            return self.judged(Status.PASS, Severity.INFO,
                               f"{len(table)} chips kept pace with each other for {evidence['duration_s']:g} s",
                               evidence={**evidence, "confidence": "high"}, host=subject.host)
        chips = [subject.chip(d) for d in onsets]
        last = windows[windows["window"] == windows["window"].max()].set_index("device")["slowness"]
        detail = "; ".join(f"{subject.chip(d)} from window {w + 1} of {count} "
                           f"(its runs now take {longer(float(last.get(d, 1.0)))} than its peers')"
                           for d, w in onsets.items())
        return self.judged(Status.FAIL, Severity.HIGH, f"slowed down during the soak: {detail}",
                           evidence={**evidence, "onsets": {subject.chip(d): w for d, w in onsets.items()},
                                     "confidence": "high"}, chips=chips, host=subject.host,
                           remediation=chip_fault(subject, chips, "a slowdown during the soak", "PERFORMANCE"))
