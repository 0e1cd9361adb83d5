"""A local Cloud Monitoring gRPC fake for tests (the Monitoring client has no REST transport).

>>> with FakeMonitoringServer() as fake:
...     fake.add_series("tpu.googleapis.com/accelerator/duty_cycle", [12.0, 8.5], node_id="my-tpu")
...     client = fake.client()   # or set TPUDOCTOR_MONITORING_ENDPOINT=fake.endpoint

Serves ``google.monitoring.v3.MetricService/ListTimeSeries`` on 127.0.0.1 (a free port),
matching ``metric.type`` and ``resource.labels.*`` clauses of the filter and the request's
interval; records every request.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from concurrent import futures
from typing import Any

_CLAUSE = re.compile(r'([A-Za-z_.]+)\s*=\s*"([^"]*)"')


class FakeMonitoringServer:
    def __init__(self) -> None:
        self.series: list[dict[str, Any]] = []
        self.requests: list[Any] = []
        self.fault: str | None = None
        """Set to "slow", "403", "429", "500" or "malformed" to break every call (``tpudoctor.testing.faults``)."""
        self.delay_s = 30.0
        self._stopping = threading.Event()
        self._server: Any = None
        self._port: int | None = None

    def add_series(
        self,
        metric_type: str,
        values: list[float | int],
        *,
        node_id: str = "my-tpu",
        worker_id: str = "0",
        zone: str = "us-central2-b",
        project: str = "my-project",
        end: _dt.datetime | None = None,
        step_s: float = 60.0,
    ) -> None:
        """``values`` are oldest first, one per ``step_s``, the last at ``end`` (default: now)."""
        end = end or _dt.datetime.now(_dt.timezone.utc)
        points = [(end - _dt.timedelta(seconds=step_s * (len(values) - 1 - i)), v) for i, v in enumerate(values)]
        self.series.append({
            "metric_type": metric_type,
            "labels": {"project_id": project, "zone": zone, "node_id": node_id, "worker_id": worker_id},
            "points": points,
        })

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self._port}"

    def client(self):
        import grpc
        from google.cloud import monitoring_v3
        from google.cloud.monitoring_v3.services.metric_service.transports import (
            MetricServiceGrpcTransport,
        )

        channel = grpc.insecure_channel(self.endpoint)
        return monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel))

    def _list_time_series(self, request: Any, context: Any) -> Any:
        from google.cloud import monitoring_v3

        self.requests.append(request)
        if self.fault == "slow":
            self._stopping.wait(self.delay_s)  # woken by stop(), so no thread outlives the server
        elif self.fault == "403":
            import grpc

            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          "Permission monitoring.timeSeries.list denied (or the resource may not exist).")
        elif self.fault in ("429", "500"):
            import grpc

            code = grpc.StatusCode.RESOURCE_EXHAUSTED if self.fault == "429" else grpc.StatusCode.INTERNAL
            context.abort(code, f"injected {code.name}")
        wanted = dict(_CLAUSE.findall(request.filter))
        start = request.interval.start_time
        end = request.interval.end_time
        out = monitoring_v3.ListTimeSeriesResponse()
        for series in self.series:
            if wanted.get("metric.type") not in (None, series["metric_type"]):
                continue
            if any(series["labels"].get(k.split(".")[-1]) != v
                   for k, v in wanted.items() if k.startswith("resource.label")):
                continue
            ts = monitoring_v3.TimeSeries()
            ts.metric.type = series["metric_type"]
            ts.resource.type = "tpu_worker"
            for key, value in series["labels"].items():
                ts.resource.labels[key] = value
            for when, value in reversed(series["points"]):  # the API returns newest first
                if (start and when < start) or (end and when > end):
                    continue
                point = monitoring_v3.Point()
                point.interval.end_time = when
                if isinstance(value, int):
                    point.value.int64_value = value
                else:
                    point.value.double_value = float(value)
                ts.points.append(point)
            out.time_series.append(ts)
        return out

    def _serialize(self, response: Any) -> bytes:
        from google.cloud import monitoring_v3

        if self.fault == "malformed":
            return b"\x0a\xff\xff\xff\xff\x0f not a protobuf"  # a length prefix far past the end
        return monitoring_v3.ListTimeSeriesResponse.serialize(response)

    def start(self) -> FakeMonitoringServer:
        import grpc
        from google.cloud import monitoring_v3

        handler = grpc.method_handlers_generic_handler("google.monitoring.v3.MetricService", {
            "ListTimeSeries": grpc.unary_unary_rpc_method_handler(
                self._list_time_series,
                request_deserializer=monitoring_v3.ListTimeSeriesRequest.deserialize,
                response_serializer=self._serialize,
            ),
        })
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self._server.add_generic_rpc_handlers((handler,))
        self._port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None

    def __enter__(self) -> FakeMonitoringServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
