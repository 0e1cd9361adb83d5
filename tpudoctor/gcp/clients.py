"""Cloud Logging and Cloud Monitoring clients, with timeouts and test endpoints.

``TPUDOCTOR_LOGGING_ENDPOINT`` (``http://host:port``) and ``TPUDOCTOR_MONITORING_ENDPOINT``
(``host:port``, plain gRPC) point the real clients at another server, without credentials;
tests point them at ``tpudoctor.testing`` fakes. Otherwise the clients use application
default credentials, and a missing credential is reported as "not available", not a crash.
"""

from __future__ import annotations

import os
from typing import Any

LOGGING_ENDPOINT_ENV = "TPUDOCTOR_LOGGING_ENDPOINT"
MONITORING_ENDPOINT_ENV = "TPUDOCTOR_MONITORING_ENDPOINT"
READ_SCOPES = (
    "https://www.googleapis.com/auth/logging.read",
    "https://www.googleapis.com/auth/monitoring.read",
)


class NoCredentials(Exception):
    """No application default credentials on this machine."""


def default_credentials() -> Any:
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _project = google.auth.default(scopes=list(READ_SCOPES))
    except DefaultCredentialsError as exc:
        raise NoCredentials(
            "no Google Cloud credentials (run 'gcloud auth application-default login', or run on a VM "
            "with a service account)") from exc
    return credentials


def _timed_session(credentials: Any, timeout_s: float) -> Any:
    """An authorised requests session whose every call has ``timeout_s`` (the library's default is 60 s)."""
    from google.auth.transport.requests import AuthorizedSession

    class TimedSession(AuthorizedSession):
        def request(self, method, url, data=None, headers=None, **kwargs):  # type: ignore[override]
            kwargs["timeout"] = timeout_s
            return super().request(method, url, data=data, headers=headers, **kwargs)

    return TimedSession(credentials)


def logging_client(project: str, timeout_s: float) -> Any:
    """A ``google.cloud.logging.Client`` over HTTP (so every call honours ``timeout_s``)."""
    from google.cloud import logging

    endpoint = os.environ.get(LOGGING_ENDPOINT_ENV)
    if endpoint:
        from google.auth.credentials import AnonymousCredentials

        credentials = AnonymousCredentials()
        return logging.Client(project=project, credentials=credentials, _use_grpc=False,
                              _http=_timed_session(credentials, timeout_s),
                              client_options={"api_endpoint": endpoint})
    credentials = default_credentials()
    return logging.Client(project=project, credentials=credentials, _use_grpc=False,
                          _http=_timed_session(credentials, timeout_s))


def monitoring_client() -> Any:
    """A ``MetricServiceClient``; calls take ``timeout=`` themselves."""
    from google.cloud import monitoring_v3

    endpoint = os.environ.get(MONITORING_ENDPOINT_ENV)
    if endpoint:
        import grpc
        from google.cloud.monitoring_v3.services.metric_service.transports import (
            MetricServiceGrpcTransport,
        )

        channel = grpc.insecure_channel(endpoint.removeprefix("http://"))
        return monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel))
    return monitoring_v3.MetricServiceClient(credentials=default_credentials())
