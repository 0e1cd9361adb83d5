"""The node's TPU duty cycle and HBM use over the window, from Cloud Monitoring."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider
from tpudoctor.providers.node_identity import NODE_FACTS, resolve_node_identity

DUTY_CYCLE = "tpu.googleapis.com/accelerator/duty_cycle"
MEMORY_USED = "tpu.googleapis.com/accelerator/memory_used"
MEMORY_TOTAL = "tpu.googleapis.com/accelerator/memory_total"


def _value(point: Any) -> float:
    kind = point.value._pb.WhichOneof("value")
    return float(getattr(point.value, kind)) if kind else float("nan")


def series_values(client: Any, project: str, metric: str, identity: Mapping[str, Any],
                  start: _dt.datetime, end: _dt.datetime, timeout_s: float) -> dict[str, list[float]]:
    """worker_id -> point values (any order) for one metric on the node."""
    from google.cloud import monitoring_v3

    query = f'metric.type="{metric}" AND resource.type="tpu_worker" AND resource.labels.node_id="{identity["node_id"]}"'
    if identity.get("zone"):
        query += f' AND resource.labels.zone="{identity["zone"]}"'
    pages = client.list_time_series(
        request={"name": f"projects/{project}", "filter": query,
                 "interval": {"start_time": start, "end_time": end},
                 "view": monitoring_v3.ListTimeSeriesRequest.TimeSeriesView.FULL},
        timeout=timeout_s,
    )
    out: dict[str, list[float]] = {}
    for series in pages:
        worker = series.resource.labels.get("worker_id", "?")
        out.setdefault(worker, []).extend(_value(p) for p in series.points)
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


class CloudMonitoringProvider(FactProvider):
    name = "cloud_monitoring"
    provides = ("logs.monitoring",)
    needs = NODE_FACTS
    timeout_s = 60.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.providers.gcp_clients import NoCredentials, monitoring_client

        identity = resolve_node_identity(ctx, facts)
        if not identity["project"] or not identity["node_id"]:
            return {"logs.monitoring": Unavailable(
                "no TPU node to read Cloud Monitoring for (give --project and --tpu NAME)")}
        try:
            client = monitoring_client()
        except NoCredentials as exc:
            return {"logs.monitoring": Unavailable(str(exc))}
        end = _dt.datetime.now(_dt.timezone.utc)
        start = end - _dt.timedelta(seconds=ctx.options.since_s)
        timeout = ctx.options.api_timeout_s
        duty = series_values(client, identity["project"], DUTY_CYCLE, identity, start, end, timeout)
        points = [v for values in duty.values() for v in values]
        if not points:
            return {"logs.monitoring": Unavailable(
                f"Cloud Monitoring has no TPU duty-cycle data for node {identity['node_id']} "
                f"in the last {ctx.options.since_s:g}s (nothing ran, or the node is not reporting)")}
        used = series_values(client, identity["project"], MEMORY_USED, identity, start, end, timeout)
        total = series_values(client, identity["project"], MEMORY_TOTAL, identity, start, end, timeout)
        used_points = [v for values in used.values() for v in values]
        total_points = [v for values in total.values() for v in values]
        return {"logs.monitoring": {
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
