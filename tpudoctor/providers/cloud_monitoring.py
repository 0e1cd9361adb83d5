"""The node's TPU duty cycle and HBM use over the window, from Cloud Monitoring."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, GatherError, Unavailable
from tpudoctor.gcp.errors import PERMISSION_DENIED, ApiCallFailed, api_cause
from tpudoctor.provider import FactProvider
from tpudoctor.providers import read_access
from tpudoctor.providers.node_identity import NODE_FACTS, resolve_node_identity

DUTY_CYCLE = "tpu.googleapis.com/accelerator/duty_cycle"
MEMORY_USED = "tpu.googleapis.com/accelerator/memory_used"
MEMORY_TOTAL = "tpu.googleapis.com/accelerator/memory_total"


def _mean(values: list[float]) -> float:
    """The mean of some values (every caller has checked there are some)."""
    return sum(values) / len(values)


class CloudMonitoringProvider(FactProvider):
    name = "cloud_monitoring"
    provides = ("logs.monitoring", "logs.monitoring_access")
    needs = NODE_FACTS
    timeout_s = 60.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        identity = resolve_node_identity(ctx, facts)
        if not identity["project"] or not identity["node_id"]:
            return self._both(Unavailable("no TPU node to read Cloud Monitoring for (give --project and --tpu NAME)"))
        try:
            api = ctx.cloud.monitoring
        except ApiCallFailed as exc:
            return self._both(Unavailable(read_access.no_credentials(exc.failure)))
        project = identity["project"]
        end = _dt.datetime.now(_dt.timezone.utc)
        start = end - _dt.timedelta(seconds=ctx.options.since_s)
        try:
            duty = api.series_values(project, DUTY_CYCLE, identity, start, end)
            points = [v for values in duty.values() for v in values]
            used = api.series_values(project, MEMORY_USED, identity, start, end) if points else {}
            total = api.series_values(project, MEMORY_TOTAL, identity, start, end) if points else {}
        except ApiCallFailed as exc:
            if exc.failure.kind == PERMISSION_DENIED:
                return {"logs.monitoring": Unavailable(f"Cloud Monitoring refused to list time series: "
                                                       f"{exc.failure.message} (see LOGS-005)"),
                        "logs.monitoring_access": read_access.denied("Cloud Monitoring", exc.failure,
                                                                     project=identity["project"], identity=api.identity)}
            return {"logs.monitoring": GatherError(self.name, f"Cloud Monitoring did not answer: {api_cause(exc)}"),
                    "logs.monitoring_access": Unavailable("Cloud Monitoring did not answer (see LOGS-004)")}
        access = read_access.readable("Cloud Monitoring")
        if not points:
            return {"logs.monitoring_access": access, "logs.monitoring": Unavailable(
                f"Cloud Monitoring has no TPU duty-cycle data for node {identity['node_id']} "
                f"in the last {ctx.options.since_s:g}s (nothing ran, or the node is not reporting)")}
        used_points = [v for values in used.values() for v in values]
        total_points = [v for values in total.values() for v in values]
        return {"logs.monitoring_access": access, "logs.monitoring": {
            "node_id": identity["node_id"],
            "window_s": ctx.options.since_s,
            "duty_cycle_points": len(points),
            "duty_cycle_mean_percent": round(_mean(points), 2),
            "duty_cycle_max_percent": round(max(points), 2),
            "duty_cycle_mean_percent_by_worker": {w: round(_mean(v), 2) for w, v in sorted(duty.items()) if v},
            "hbm_used_max_bytes": int(max(used_points)) if used_points else None,
            "hbm_used_mean_bytes": int(_mean(used_points)) if used_points else None,
            "hbm_total_bytes": int(max(total_points)) if total_points else None,
        }}

    def _both(self, value: Any) -> dict[str, Any]:
        return {key: value for key in self.provides}
