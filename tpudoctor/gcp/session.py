"""One Google Cloud session per run: where each API is, which credentials, who they belong to, whether this
machine is on Google Cloud, and the clients (``.tpu``, ``.storage``, ``.logging``, ``.monitoring``,
``.metadata``), each built the first time it is used.

Endpoints come from the environment the run was started with (``Endpoints``; the README's "Endpoints and
credentials"). An ``http://`` endpoint is a local fake or emulator: it is called anonymously. Every other
endpoint gets Application Default Credentials, resolved once for the session; without a credentials file,
only a machine on Google Cloud has any (its service account, through the metadata server), so elsewhere the
answer "no credentials" comes at once instead of after google-auth's own metadata probe.

On Google Cloud means: a metadata server answers (google-auth's own test), asked once and only when it
matters; never asked where the firmware names another vendor and no metadata host was set.

Every client call has the session's timeout and a bounded retry; every failure leaves as ``ApiCallFailed``
(``tpudoctor.gcp.errors``), which ``user_error`` turns into a message and the fix. Nothing here imports a
client library before a client is asked for, so a run that needs none pays nothing.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from typing import Any

from tpudoctor.gcp.credentials import Identity, adc_file, is_local_endpoint
from tpudoctor.gcp.errors import NO_CREDENTIALS, ApiCallFailed, ApiFailure

TPU_ENDPOINT_ENV = "TPUDOCTOR_TPU_ENDPOINT"
STORAGE_ENDPOINT_ENV = "STORAGE_EMULATOR_HOST"
LOGGING_ENDPOINT_ENV = "TPUDOCTOR_LOGGING_ENDPOINT"
MONITORING_ENDPOINT_ENV = "TPUDOCTOR_MONITORING_ENDPOINT"
METADATA_HOST_ENV = ("GCE_METADATA_HOST", "GCE_METADATA_ROOT", "GCE_METADATA_IP")
SYSFS_ROOT_ENV = "TPUDOCTOR_SYSFS_ROOT"
DEFAULT_TPU_ENDPOINT = "https://tpu.googleapis.com"
METADATA_TIMEOUT_S = 0.8
"""The metadata server is on the VM's own link: it answers in milliseconds or is not there."""
UNKNOWN_PROJECT = "tpudoctor-unknown-project"
"""For clients that want a project where none is known; none of tpudoctor's calls bills or lists by it."""
ENDPOINT_VARIABLES = (TPU_ENDPOINT_ENV, STORAGE_ENDPOINT_ENV, LOGGING_ENDPOINT_ENV, MONITORING_ENDPOINT_ENV,
                      *METADATA_HOST_ENV, "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "HOME",
                      SYSFS_ROOT_ENV)
"""The variables a session reads; a worker's command line never carries them (its own environment does)."""


@dataclasses.dataclass(frozen=True)
class Endpoints:
    """Where each Google API is, and where the credentials come from: plain values, read once."""

    tpu: str | None = None
    """Cloud TPU API v2; None: tpu.googleapis.com."""
    storage: str | None = None
    """Cloud Storage (``STORAGE_EMULATOR_HOST``, scheme included); None: storage.googleapis.com."""
    logging: str | None = None
    """Cloud Logging over REST; None: logging.googleapis.com."""
    monitoring: str | None = None
    """Cloud Monitoring, plain gRPC ``host:port``; None: monitoring.googleapis.com."""
    metadata_host: str = ""
    """The metadata server's ``host[:port]``; empty: the link-local default."""
    metadata_overridden: bool = False
    """A variable named the metadata host: a server must be there."""
    adc_file: str | None = None
    """The Application Default Credentials file, where there is one."""
    sysfs_root: str = "/sys"
    """Where the firmware's name is read (``TPUDOCTOR_SYSFS_ROOT`` for tests)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Endpoints:
        from tpudoctor.gcp import metadata

        environ = os.environ if environ is None else environ
        host, overridden = metadata.DEFAULT_METADATA_HOST, False
        for var in METADATA_HOST_ENV:
            value = environ.get(var, "").strip()
            if value:
                host, overridden = value.removeprefix("http://").split("/")[0], True
                break
        found = adc_file(environ)
        return cls(tpu=_endpoint(environ, TPU_ENDPOINT_ENV), storage=_endpoint(environ, STORAGE_ENDPOINT_ENV),
                   logging=_endpoint(environ, LOGGING_ENDPOINT_ENV),
                   monitoring=_endpoint(environ, MONITORING_ENDPOINT_ENV), metadata_host=host,
                   metadata_overridden=overridden, adc_file=str(found) if found else None,
                   sysfs_root=environ.get(SYSFS_ROOT_ENV, "/sys"))

    @property
    def tpu_url(self) -> str:
        return self.tpu or DEFAULT_TPU_ENDPOINT


def _endpoint(environ: Mapping[str, str], var: str) -> str | None:
    return environ.get(var, "").strip() or None


class Session:
    """Google Cloud for one run. Thread-safe: fact providers use it from their own threads."""

    def __init__(self, endpoints: Endpoints | None = None, *, timeout_s: float = 10.0, project: str | None = None,
                 on_google_cloud: bool | None = None, _shared: dict[str, Any] | None = None):
        self.endpoints = endpoints if endpoints is not None else Endpoints.from_environ()
        self.timeout_s = timeout_s
        self.project = project
        self._lock = threading.RLock()
        self._clients: dict[str, Any] = {}
        # credentials and the on-Google-Cloud answer are the session's, whatever the timeout of a copy
        self._shared: dict[str, Any] = _shared if _shared is not None else {"lock": threading.RLock()}
        if on_google_cloud is not None:
            self._shared["on_google_cloud"] = on_google_cloud

    @classmethod
    def from_environment(cls, *, timeout_s: float = 10.0, project: str | None = None) -> Session:
        """A session from this process's environment: for library use and for worker processes."""
        return cls(Endpoints.from_environ(), timeout_s=timeout_s, project=project)

    def with_timeout(self, timeout_s: float) -> Session:
        """The same session (endpoints, credentials) whose calls wait at most ``timeout_s``."""
        if timeout_s == self.timeout_s:
            return self
        return Session(self.endpoints, timeout_s=timeout_s, project=self.project, _shared=self._shared)

    # --- where this runs and who calls ----------------------------------------------------------
    @property
    def on_google_cloud(self) -> bool:
        with self._shared["lock"]:
            if "on_google_cloud" not in self._shared:
                self._shared["on_google_cloud"] = self._metadata_answers()
            return self._shared["on_google_cloud"]

    def _metadata_answers(self) -> bool:
        from tpudoctor.gcp.metadata import MetadataUnavailable, dmi_says_not_google

        if not self.endpoints.metadata_overridden and dmi_says_not_google(self.endpoints.sysfs_root):
            return False
        try:
            self.metadata.get("project/project-id")
        except MetadataUnavailable:
            return False
        return True

    def identity_for(self, endpoint: str | None) -> Identity:
        """Who calls ``endpoint``; ``ApiCallFailed`` (no credentials) with the reason when nobody can."""
        return self._credentials_for(endpoint)[1]

    def _credentials_for(self, endpoint: str | None, *, local: bool = False) -> tuple[Any, Identity]:
        """Anonymous for a local endpoint (``http://``, or ``local``: one that speaks plain gRPC), else ADC."""
        if local or is_local_endpoint(endpoint):
            from google.auth.credentials import AnonymousCredentials

            return AnonymousCredentials(), Identity(None, "anonymous", f"anonymous (local endpoint {endpoint})")
        with self._shared["lock"]:
            if "adc" not in self._shared:
                try:
                    self._shared["adc"] = self._application_default()
                except ApiCallFailed as exc:
                    self._shared["adc"] = exc
            found = self._shared["adc"]
        if isinstance(found, ApiCallFailed):
            raise ApiCallFailed(found.failure)
        return found

    def _application_default(self) -> tuple[Any, Identity]:
        credentials_file = self.endpoints.adc_file
        on_gce = self.on_google_cloud if credentials_file is None else None
        if credentials_file is None and not on_gce:
            raise ApiCallFailed(ApiFailure(
                NO_CREDENTIALS,
                "no Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, "
                "there is no gcloud application-default credentials file and this is not a Google Cloud VM",
            ))
        import google.auth
        from google.auth import exceptions as auth_exc

        try:
            credentials, _project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        except auth_exc.DefaultCredentialsError as exc:
            raise ApiCallFailed(ApiFailure(NO_CREDENTIALS, str(exc).splitlines()[0])) from exc
        email = getattr(credentials, "service_account_email", None)
        if email in (None, "default"):
            email = self._metadata_email() if credentials_file is None else None
        if email:
            source = ("the VM's service account (metadata server)" if credentials_file is None
                      else f"service account key {credentials_file}")
            return credentials, Identity(email, "service_account", source)
        if credentials_file is not None:
            account = getattr(credentials, "account", None) or None
            return credentials, Identity(account, "user", f"user credentials from {credentials_file}")
        return credentials, Identity(None, "unknown", type(credentials).__name__)

    def _metadata_email(self) -> str | None:
        """The VM's service account, which Application Default Credentials use on Google Cloud."""
        from tpudoctor.gcp.metadata import MetadataUnavailable

        try:
            return (self.metadata.get("instance/service-accounts/default/email") or "").strip() or None
        except MetadataUnavailable:
            return None

    # --- the clients, each built once ------------------------------------------------------------
    def _client(self, name: str, build) -> Any:
        with self._lock:
            if name not in self._clients:
                self._clients[name] = build()
            return self._clients[name]

    @property
    def metadata(self):
        """The metadata server (``tpudoctor.gcp.metadata.MetadataClient``), with a short timeout."""
        from tpudoctor.gcp.metadata import MetadataClient

        return self._client("metadata", lambda: MetadataClient(self.endpoints.metadata_host,
                                                              timeout_s=min(METADATA_TIMEOUT_S, self.timeout_s)))

    @property
    def tpu(self):
        """The Cloud TPU API (``tpudoctor.gcp.tpu_api.TpuApi``); ``ApiCallFailed`` without credentials."""
        def build():
            from tpudoctor.gcp.tpu_api import TpuApi

            credentials, identity = self._credentials_for(self.endpoints.tpu)
            return TpuApi(credentials, identity=identity, endpoint=self.endpoints.tpu, timeout_s=self.timeout_s)

        return self._client("tpu", build)

    @property
    def storage(self):
        """Cloud Storage (``tpudoctor.gcp.storage.StorageApi``); ``ApiCallFailed`` without credentials."""
        def build():
            from tpudoctor.gcp.storage import StorageApi

            credentials, identity = self._credentials_for(self.endpoints.storage)
            return StorageApi(credentials, identity=identity, project=self.project or UNKNOWN_PROJECT,
                              endpoint=self.endpoints.storage, timeout_s=self.timeout_s)

        return self._client("storage", build)

    @property
    def logging(self):
        """Cloud Logging (``tpudoctor.gcp.observability.LoggingApi``); ``ApiCallFailed`` without credentials."""
        def build():
            from tpudoctor.gcp.observability import LoggingApi

            credentials, identity = self._credentials_for(self.endpoints.logging)
            return LoggingApi(credentials, identity=identity, endpoint=self.endpoints.logging,
                              project=self.project or UNKNOWN_PROJECT, timeout_s=self.timeout_s)

        return self._client("logging", build)

    @property
    def monitoring(self):
        """Cloud Monitoring (``tpudoctor.gcp.observability.MonitoringApi``); ``ApiCallFailed`` without
        credentials. A set endpoint is plain gRPC, called anonymously."""
        def build():
            from tpudoctor.gcp.observability import MonitoringApi

            endpoint = self.endpoints.monitoring
            credentials, identity = self._credentials_for(endpoint, local=bool(endpoint))
            return MonitoringApi(credentials, identity=identity, endpoint=endpoint, timeout_s=self.timeout_s)

        return self._client("monitoring", build)


_process_sessions: dict[Endpoints, Session] = {}
_process_lock = threading.Lock()


def process_session(timeout_s: float) -> Session:
    """A session from this process's environment, for code that was handed none: a pool or Dask worker
    reading a capture, a library caller. Credentials are resolved once per set of endpoints."""
    endpoints = Endpoints.from_environ()
    with _process_lock:
        base = _process_sessions.get(endpoints)
        if base is None:
            base = _process_sessions[endpoints] = Session(endpoints, timeout_s=timeout_s)
    return base.with_timeout(timeout_s)
