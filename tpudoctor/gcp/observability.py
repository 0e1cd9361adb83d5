"""Cloud Logging and Cloud Monitoring reads: one timeout per call, bounded retries, one error mapping.

Both are built by the session (``tpudoctor.gcp.session``). Failures leave as ``ApiCallFailed`` with an
``ApiFailure`` (``tpudoctor.gcp.errors``), exactly as the TPU API and storage adapters report them, so a 403
names the permission and the role.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Mapping
from typing import Any

from tpudoctor.cloud_knowledge.iam import LOGGING_PERMISSION, MONITORING_PERMISSION
from tpudoctor.gcp.credentials import Identity
from tpudoctor.gcp.errors import call_with_retries


class LoggingApi:
    """``google.cloud.logging.Client`` over HTTP, so that every call honours the timeout; built by the
    session (``Session.logging``). ``TPUDOCTOR_LOGGING_ENDPOINT`` (``http://host:port``) points it elsewhere."""

    def __init__(self, credentials: Any, *, identity: Identity, endpoint: str | None, project: str,
                 timeout_s: float, attempts: int = 3, backoff_s: float = 0.25):
        from google.cloud import logging

        options = {"api_endpoint": endpoint} if endpoint else None
        self._client = logging.Client(project=project, credentials=credentials, _use_grpc=False,
                                      _http=_timed_session(credentials, timeout_s), client_options=options)
        self.identity = identity
        """Who the calls are made as: the member a grant must name after a 403."""
        self.attempts = attempts
        self.backoff_s = backoff_s

    def entries(self, project: str, filter_: str, *, page_size: int, max_entries: int) -> list[Any]:
        """Every entry of ``project`` matching ``filter_``, oldest first, at most ``max_entries``; paged by the
        client."""
        from google.cloud.logging import ASCENDING

        def fetch() -> list[Any]:  # a retry starts the listing again: no half-read pages are kept
            return list(self._client.list_entries(resource_names=[f"projects/{project}"], filter_=filter_,
                                                  order_by=ASCENDING, page_size=page_size, max_results=max_entries))

        return call_with_retries(fetch, permission=LOGGING_PERMISSION, attempts=self.attempts,
                                 backoff_s=self.backoff_s)

    def iter_entries(self, project: str, filter_: str, *, page_size: int, max_entries: int) -> Iterator[Any]:
        """The same entries streamed page by page, for listings too long to hold (a job's whole log); a
        failure leaves as ``ApiCallFailed``, after the first page too."""
        from google.cloud.logging import ASCENDING

        from tpudoctor.gcp.errors import ApiCallFailed, failure_from_exception

        try:
            yield from self._client.list_entries(resource_names=[f"projects/{project}"], filter_=filter_,
                                                 order_by=ASCENDING, page_size=page_size, max_results=max_entries)
        except Exception as exc:  # noqa: BLE001 - mapped to a record, never re-raised raw
            raise ApiCallFailed(failure_from_exception(exc, permission=LOGGING_PERMISSION)) from exc


class MonitoringApi:
    """``MetricServiceClient`` (its calls take ``timeout=`` themselves); built by the session
    (``Session.monitoring``). ``TPUDOCTOR_MONITORING_ENDPOINT`` (plain gRPC ``host:port``) points it elsewhere."""

    def __init__(self, credentials: Any, *, identity: Identity, endpoint: str | None, timeout_s: float):
        from google.cloud import monitoring_v3

        if endpoint:
            import grpc
            from google.cloud.monitoring_v3.services.metric_service.transports import (
                MetricServiceGrpcTransport,
            )

            channel = grpc.insecure_channel(endpoint.removeprefix("http://"))
            self._client = monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel))
        else:
            self._client = monitoring_v3.MetricServiceClient(credentials=credentials)
        self.identity = identity
        """Who the calls are made as: the member a grant must name after a 403."""
        self.timeout_s = timeout_s

    def series_values(self, project: str, metric: str, identity: Mapping[str, Any], start: _dt.datetime,
                      end: _dt.datetime) -> dict[str, list[float]]:
        """worker_id -> point values (any order) for one metric on the node, in ``project``."""
        from google.cloud import monitoring_v3

        query = (f'metric.type="{metric}" AND resource.type="tpu_worker" '
                 f'AND resource.labels.node_id="{identity["node_id"]}"')
        if identity.get("zone"):
            query += f' AND resource.labels.zone="{identity["zone"]}"'

        def fetch() -> dict[str, list[float]]:
            pages = self._client.list_time_series(
                request={"name": f"projects/{project}", "filter": query,
                         "interval": {"start_time": start, "end_time": end},
                         "view": monitoring_v3.ListTimeSeriesRequest.TimeSeriesView.FULL},
                timeout=self.timeout_s,
                # The library's default policy retries UNAVAILABLE for up to a minute; this one stops
                # at the user's --api-timeout.
                retry=_bounded_retry(self.timeout_s),
            )
            out: dict[str, list[float]] = {}
            for series in pages:
                worker = series.resource.labels.get("worker_id", "?")
                out.setdefault(worker, []).extend(_value(p) for p in series.points)
            return out

        # The bounded policy above already retried what is worth retrying; this maps the failure.
        return call_with_retries(fetch, permission=MONITORING_PERMISSION, attempts=1)


def _timed_session(credentials: Any, timeout_s: float) -> Any:
    """An authorised requests session whose every call has ``timeout_s`` (the library's default is 60 s)."""
    from google.auth.transport.requests import AuthorizedSession

    class TimedSession(AuthorizedSession):
        def request(self, method, url, data=None, headers=None, **kwargs):  # type: ignore[override]
            kwargs["timeout"] = timeout_s
            return super().request(method, url, data=data, headers=headers, **kwargs)

    return TimedSession(credentials)


def _value(point: Any) -> float:
    kind = point.value._pb.WhichOneof("value")
    return float(getattr(point.value, kind)) if kind else float("nan")


def _bounded_retry(timeout_s: float) -> Any:
    from google.api_core import exceptions, retry

    return retry.Retry(predicate=retry.if_exception_type(exceptions.ServiceUnavailable, exceptions.TooManyRequests,
                                                         exceptions.ResourceExhausted),
                       initial=0.1, maximum=max(0.1, timeout_s / 4), multiplier=2.0, timeout=timeout_s)
