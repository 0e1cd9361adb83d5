"""What a straggler costs: the step time the job would save if this host were not slow."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostResult
from tpudoctor.profile.rule import Example, ProfileRule

WHATIF_TABLE = "straggler_whatif"  # analysis.whatif.ROWS_TABLE (rules read HostResult only)


def _host(name: str, saved_ms: float, share: float, priced: bool = True, onset: int | None = None) -> HostResult:
    savings = [{"host": name, "saved_ms": saved_ms, "saved_percent": 100 * saved_ms / 40.0, "slowdown_share": share},
               {"host": "worker0", "saved_ms": 0.1, "saved_percent": 0.25, "slowdown_share": 1 - share}]
    kept = 0.95 * saved_ms if priced else 0.0
    row = {"host": name, "saved_ms": saved_ms, "saved_percent": 100 * saved_ms / 40.0, "slowdown_share": share,
           "persistent_saved_ms": kept, "persistent_saved_percent": 100 * kept / 40.0, "priced": priced,
           "persistent": priced, "p_value": 1e-4 if priced else 0.4, "onset_step": onset, "spread_ms": 1.0,
           "critical_segments": 12, "critical_fraction": 12 / 13 if share > 0.5 else 0.1, "measured_step_ms": 40.0, "simulated_step_ms": 40.0, "ideal_step_ms": 10.0,
           "slowdown_ms": 30.0, "hosts": 4, "steps": 12, "savings": savings}
    return HostResult(name, tables={WHATIF_TABLE: [row]})


class StragglerCost(ProfileRule):
    """Fires on a host whose slowness costs the job step time, priced by the straggler what-if
    (``analysis.whatif``): every device's timeline cut at its collectives and replayed as a chain of
    sync points (each collective completes when its last participant arrives), then replayed again
    with this host's persistent excess removed. A host is priced only when its excess over the
    median device is persistent beyond noise (above it in more steps than chance allows, by more than
    its own spread: ``analysis.persistence``); a slowdown without one is spread across the hosts
    (random imbalance) and names nobody. The evidence lists every host's saving, the all-median
    saving beside the persistent one, and its share of the slowdown."""

    id = "straggler-cost"
    title = "No host's slowness costs much step time"
    lead_rank = 6
    needs = ("steps", "device-ops", "other-hosts")
    MIN_SAVED_PERCENT = 5.0
    HIGH_SAVED_PERCENT = 20.0
    MODEL_FIT_PERCENT = 5.0
    """Beyond this, the model (waits predicted from typical transfers) misses the measured step: figures rough."""
    docs = "https://arxiv.org/abs/2505.05713"
    examples = (
        Example("this host costs 29 of 40 ms", _host("worker2", 29.0, 0.98), Status.FAIL),
        Example("this host costs 3 of 40 ms since step 8", _host("worker2", 3.0, 0.6, onset=8), Status.WARN),
        Example("noise: 3 of 40 ms, not persistent", _host("worker2", 3.0, 0.4, priced=False), Status.PASS),
        Example("this host costs nothing", _host("worker1", 0.0, 0.0), Status.PASS),
        Example("single host", HostResult("h"), Status.PASS),
    )

    def _fit_words(self, error_percent) -> str:
        if error_percent is None or abs(float(error_percent)) <= self.MODEL_FIT_PERCENT:
            return ""
        return (f" The model fits this capture only to {float(error_percent):+.1f}% (each wait predicted from the "
                "arrivals with typical transfers): treat these figures as rough.")

    def evaluate(self, host: HostResult):
        rows = host.tables.get(WHATIF_TABLE) or []
        if not rows:
            return self.passed("single host, too few steps or no collectives: nothing to price",
                               evidence={"saved_ms": None})
        row = rows[0]
        saved = float(row.get("persistent_saved_ms") or 0.0)
        percent = float(row.get("persistent_saved_percent") or 0.0)
        evidence = {k: row.get(k) for k in ("persistent_saved_ms", "persistent_saved_percent", "saved_ms",
                                            "saved_percent", "persistent", "p_value", "onset_step", "time_class", "spread_ms",
                                            "slowdown_share", "critical_segments", "critical_fraction",
                                            "measured_step_ms", "simulated_step_ms", "ideal_step_ms", "slowdown_ms",
                                            "model_error_percent", "steps", "hosts")}
        evidence["savings_per_host"] = row.get("savings") or []
        if not row.get("priced"):
            return self.passed(f"{host.host} not persistently slow: its excess over the median host is within "
                               f"noise (sign test p={float(row.get('p_value') or 1.0):.2g}); the "
                               f"{float(row.get('spread_ms') or 0.0):.2f} ms slowdown is spread across hosts",
                               evidence=evidence)
        if percent < self.MIN_SAVED_PERCENT:
            return self.passed(f"{host.host} persistently slow by little: {saved:.2f} ms per step ({percent:.1f}%)",
                               evidence=evidence)
        onset = row.get("onset_step")
        since = f" since step {onset}" if onset is not None else ""
        kind = f" ({row['time_class']} time)" if row.get("time_class") not in (None, "", "unknown") else ""
        severity = Severity.HIGH if percent >= self.HIGH_SAVED_PERCENT else Severity.MEDIUM
        share = float(row.get("slowdown_share") or 0.0)
        others = ", ".join(f"{r['host']} {float(r.get('persistent_saved_ms') or 0):.2f} ms"
                           for r in row.get("savings") or [] if r.get("host") != host.host and r.get("priced"))
        return self.fired(
            severity,
            f"Straggler cost: {host.host}'s persistent excess{kind}{since} costs {saved:.1f} ms per step "
            f"({percent:.0f}%)",
            f"Replaying the {row.get('steps')} steps as a chain of sync points (each collective completes when its "
            f"last participant arrives) gives {float(row.get('simulated_step_ms') or 0):.2f} ms per step "
            f"(measured {float(row.get('measured_step_ms') or 0):.2f} ms); with {host.host}'s persistent excess "
            f"removed{since} it is {float(row.get('simulated_step_ms') or 0) - saved:.2f} ms (its segments all at "
            f"the median: {float(row.get('saved_ms') or 0):.2f} ms saved, random spread included), and with "
            f"every device at the median {float(row.get('ideal_step_ms') or 0):.2f} ms. Its excess is above the "
            f"median host in more steps than chance allows (sign test p={float(row.get('p_value') or 0):.2g}). "
            f"{host.host} causes "
            f"{100 * share:.0f}% of the {float(row.get('slowdown_ms') or 0):.2f} ms slowdown (its last arrivals on the "
            f"critical path: {row.get('critical_segments')} segments)." + (f" Other persistently slow hosts: {others}." if others else "")
            + self._fit_words(row.get("model_error_percent")),
            evidence=evidence,
            fixes=(f"Fix {host.host} first: it is worth {saved:.1f} ms per step; see the straggler finding for what "
                   "to look at",
                   "Open the HTML report's critical-path picture to see which segments of the step it delays"),
            commands=("tpudoctor profile analyze <logdir> --format html",))
