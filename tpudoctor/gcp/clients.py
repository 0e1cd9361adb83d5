"""Cloud Logging and Cloud Monitoring clients, with timeouts, test endpoints and the caller's identity.

``TPUDOCTOR_LOGGING_ENDPOINT`` (``http://host:port``) and ``TPUDOCTOR_MONITORING_ENDPOINT``
(``host:port``, plain gRPC) point the real clients at another server, without credentials;
tests point them at ``tpudoctor.testing`` fakes. Otherwise the clients use Application Default
Credentials resolved as for the TPU API and storage (``tpudoctor.gcp.credentials``), so a refusal
can name who was refused; missing credentials are reported as "not available", not a crash.
"""

from __future__ import annotations

import os
from typing import Any

from tpudoctor.gcp.credentials import Identity

LOGGING_ENDPOINT_ENV = "TPUDOCTOR_LOGGING_ENDPOINT"
MONITORING_ENDPOINT_ENV = "TPUDOCTOR_MONITORING_ENDPOINT"


class NoCredentials(Exception):
    """No application default credentials on this machine."""


def caller_credentials(metadata_email: str | None = None) -> tuple[Any, Identity]:
    """(credentials, identity) for a Google endpoint; ``NoCredentials`` with the fix when there are none."""
    from tpudoctor.gcp.credentials import on_google_cloud_vm, resolve_credentials
    from tpudoctor.gcp.errors import ApiCallFailed

    try:
        return resolve_credentials(None, on_gce=on_google_cloud_vm(), metadata_email=metadata_email)
    except ApiCallFailed as exc:
        raise NoCredentials(
            f"no Google Cloud credentials ({exc.failure.message}); run 'gcloud auth application-default login', "
            "or run on a VM with a service account") from exc


def _anonymous(endpoint: str) -> tuple[Any, Identity]:
    from google.auth.credentials import AnonymousCredentials

    return AnonymousCredentials(), Identity(None, "anonymous", f"anonymous (local endpoint {endpoint})")


def _timed_session(credentials: Any, timeout_s: float) -> Any:
    """An authorised requests session whose every call has ``timeout_s`` (the library's default is 60 s)."""
    from google.auth.transport.requests import AuthorizedSession

    class TimedSession(AuthorizedSession):
        def request(self, method, url, data=None, headers=None, **kwargs):  # type: ignore[override]
            kwargs["timeout"] = timeout_s
            return super().request(method, url, data=data, headers=headers, **kwargs)

    return TimedSession(credentials)


def logging_client(project: str, timeout_s: float, *, metadata_email: str | None = None) -> tuple[Any, Identity]:
    """A ``google.cloud.logging.Client`` over HTTP (so every call honours ``timeout_s``), and who it calls as."""
    from google.cloud import logging

    endpoint = os.environ.get(LOGGING_ENDPOINT_ENV)
    if endpoint:
        credentials, identity = _anonymous(endpoint)
        return logging.Client(project=project, credentials=credentials, _use_grpc=False,
                              _http=_timed_session(credentials, timeout_s),
                              client_options={"api_endpoint": endpoint}), identity
    credentials, identity = caller_credentials(metadata_email)
    return logging.Client(project=project, credentials=credentials, _use_grpc=False,
                          _http=_timed_session(credentials, timeout_s)), identity


def monitoring_client(*, metadata_email: str | None = None) -> tuple[Any, Identity]:
    """A ``MetricServiceClient`` (calls take ``timeout=`` themselves), and who it calls as."""
    from google.cloud import monitoring_v3

    endpoint = os.environ.get(MONITORING_ENDPOINT_ENV)
    if endpoint:
        import grpc
        from google.cloud.monitoring_v3.services.metric_service.transports import (
            MetricServiceGrpcTransport,
        )

        channel = grpc.insecure_channel(endpoint.removeprefix("http://"))
        _credentials, identity = _anonymous(endpoint)
        return monitoring_v3.MetricServiceClient(transport=MetricServiceGrpcTransport(channel=channel)), identity
    credentials, identity = caller_credentials(metadata_email)
    return monitoring_v3.MetricServiceClient(credentials=credentials), identity
