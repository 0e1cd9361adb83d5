"""Cloud Logging and Cloud Monitoring reads: one timeout per call, bounded retries, one error mapping.

Failures leave as ``ApiCallFailed`` with an ``ApiFailure`` (``tpudoctor.gcp.errors``), exactly as
the TPU API and storage adapters report them, so a 403 names the permission and the role.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Mapping
from typing import Any

from tpudoctor.cloud_knowledge.iam import LOGGING_PERMISSION, MONITORING_PERMISSION
from tpudoctor.gcp.clients import logging_client, monitoring_client
from tpudoctor.gcp.errors import call_with_retries


class LoggingApi:
    def __init__(self, project: str, *, timeout_s: float, attempts: int = 3, backoff_s: float = 0.25,
                 metadata_email: str | None = None):
        self.project = project
        # NoCredentials when there are none; identity says who a 403 refused
        self._client, self.identity = logging_client(project, timeout_s, metadata_email=metadata_email)
        self.attempts = attempts
        self.backoff_s = backoff_s

    def entries(self, filter_: str, *, page_size: int, max_entries: int) -> list[Any]:
        """Every entry matching ``filter_``, oldest first, at most ``max_entries``; paged by the client."""
        from google.cloud.logging import ASCENDING

        def fetch() -> list[Any]:  # a retry starts the listing again: no half-read pages are kept
            return list(self._client.list_entries(resource_names=[f"projects/{self.project}"], filter_=filter_,
                                                  order_by=ASCENDING, page_size=page_size, max_results=max_entries))

        return call_with_retries(fetch, permission=LOGGING_PERMISSION, attempts=self.attempts,
                                 backoff_s=self.backoff_s)

    def iter_entries(self, filter_: str, *, page_size: int, max_entries: int) -> Iterator[Any]:
        """The same entries streamed page by page, for listings too long to hold (a job's whole log); a
        failure leaves as ``ApiCallFailed``, after the first page too."""
        from google.cloud.logging import ASCENDING

        from tpudoctor.gcp.errors import ApiCallFailed, failure_from_exception

        try:
            yield from self._client.list_entries(resource_names=[f"projects/{self.project}"], filter_=filter_,
                                                 order_by=ASCENDING, page_size=page_size, max_results=max_entries)
        except Exception as exc:  # noqa: BLE001 - mapped to a record, never re-raised raw
            raise ApiCallFailed(failure_from_exception(exc, permission=LOGGING_PERMISSION)) from exc


class MonitoringApi:
    def __init__(self, project: str, *, timeout_s: float, metadata_email: str | None = None):
        self.project = project
        self.timeout_s = timeout_s
        self._client, self.identity = monitoring_client(metadata_email=metadata_email)  # NoCredentials if none

    def series_values(self, metric: str, identity: Mapping[str, Any], start: _dt.datetime,
                      end: _dt.datetime) -> dict[str, list[float]]:
        """worker_id -> point values (any order) for one metric on the node."""
        from google.cloud import monitoring_v3

        query = (f'metric.type="{metric}" AND resource.type="tpu_worker" '
                 f'AND resource.labels.node_id="{identity["node_id"]}"')
        if identity.get("zone"):
            query += f' AND resource.labels.zone="{identity["zone"]}"'

        def fetch() -> dict[str, list[float]]:
            pages = self._client.list_time_series(
                request={"name": f"projects/{self.project}", "filter": query,
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


def _value(point: Any) -> float:
    kind = point.value._pb.WhichOneof("value")
    return float(getattr(point.value, kind)) if kind else float("nan")


def _bounded_retry(timeout_s: float) -> Any:
    from google.api_core import exceptions, retry

    return retry.Retry(predicate=retry.if_exception_type(exceptions.ServiceUnavailable, exceptions.TooManyRequests,
                                                         exceptions.ResourceExhausted),
                       initial=0.1, maximum=max(0.1, timeout_s / 4), multiplier=2.0, timeout=timeout_s)
