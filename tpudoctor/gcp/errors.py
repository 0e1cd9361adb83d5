"""Turns client-library exceptions into one small record a check can judge: ``ApiFailure``, carried by the
one exception type of ``tpudoctor.gcp``, ``ApiCallFailed``; and a failure into what a person reads
(``user_error``: what failed, why, and the role or command that fixes it).

The REST transports raise ``google.api_core`` exceptions for HTTP errors but plain ``requests``
exceptions for timeouts and refused connections, so both are mapped here, once.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tpudoctor.cloud_knowledge.failures import (
    BAD_REQUEST,
    MALFORMED,
    NO_CREDENTIALS,
    NOT_FOUND,
    PERMISSION_DENIED,
    RATE_LIMITED,
    RETRYABLE_KINDS,
    SERVER_ERROR,
    TIMEOUT,
    TRUNCATED,
    UNKNOWN,
    UNREACHABLE,
)
from tpudoctor.cloud_knowledge.iam import ADC_SETUP_COMMANDS, role_for
from tpudoctor.errors import InputError

T = TypeVar("T")
_QUOTED_PERMISSION = re.compile(r"[Pp]ermission '([a-z]+\.[A-Za-z]+\.[A-Za-z]+)'")
_PERMISSION_IN_TEXT = re.compile(r"\b((?:tpu|storage|compute|logging|monitoring)\.[A-Za-z]+\.[A-Za-z]+)\b")


@dataclasses.dataclass(frozen=True)
class ApiFailure:
    """Why a cloud call did not answer, in terms a check can turn into a verdict."""

    kind: str
    message: str
    http_status: int | None = None
    permission: str | None = None
    attempts: int = 1

    @property
    def role(self) -> str | None:
        return role_for(self.permission)

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["role"] = self.role
        return data


class ApiCallFailed(Exception):
    """Carries an ``ApiFailure`` out of an adapter call."""

    def __init__(self, failure: ApiFailure):
        super().__init__(failure.message)
        self.failure = failure


def failure_from_exception(exc: BaseException, *, permission: str | None = None) -> ApiFailure:
    """Map any exception a Google client can raise to an ``ApiFailure``.

    ``permission`` is the permission the call needs; it is named on a 403 when the server's
    answer does not name one itself.
    """
    import http.client  # here, with the client libraries: a run that calls no API does not import it

    import requests
    from google.api_core import exceptions as gexc
    from google.auth import exceptions as auth_exc

    if isinstance(exc, ApiCallFailed):
        return exc.failure
    if isinstance(exc, auth_exc.DefaultCredentialsError):
        return ApiFailure(NO_CREDENTIALS, _first_line(exc))
    if isinstance(exc, auth_exc.RefreshError):
        return ApiFailure(NO_CREDENTIALS, f"could not get an access token: {_first_line(exc)}")
    if isinstance(exc, gexc.GoogleAPICallError):
        code = int(exc.code) if exc.code is not None else None
        text = exc.message or str(exc)
        named = (getattr(exc, "metadata", None) or {}).get("permission") if code == 403 else None
        if code == 403 and not named:
            match = _QUOTED_PERMISSION.search(text) or _PERMISSION_IN_TEXT.search(text)
            named = match.group(1) if match else permission
        kind = _KIND_FOR_STATUS.get(code or 0)
        if kind is None:
            kind = SERVER_ERROR if code and code >= 500 else UNKNOWN
        return ApiFailure(kind, _strip_url(text), http_status=code, permission=named)
    if isinstance(exc, gexc.RetryError):
        if exc.cause is not None:  # name what kept failing, not just that retrying ran out of time
            inner = failure_from_exception(exc.cause, permission=permission)
            return dataclasses.replace(inner, message=f"{inner.message} (still failing when the retry time ran out)")
        return ApiFailure(TIMEOUT, _first_line(exc))
    if isinstance(exc, (requests.exceptions.ChunkedEncodingError, http.client.IncompleteRead)):
        return ApiFailure(TRUNCATED, f"the connection closed in the middle of the answer: {_first_line(exc)}")
    if isinstance(exc, (requests.Timeout, TimeoutError)):
        return ApiFailure(TIMEOUT, f"no answer in time: {_first_line(exc)}")
    if isinstance(exc, (requests.ConnectionError, ConnectionError)):
        return ApiFailure(UNREACHABLE, f"cannot connect: {_connection_reason(exc)}")
    if isinstance(exc, ValueError) or type(exc).__name__ in ("ParseError", "DecodeError"):
        # json.JSONDecodeError, protobuf's json_format.ParseError: the server answered garbage.
        return ApiFailure(MALFORMED, f"the answer was not valid JSON/protobuf: {type(exc).__name__}: {_first_line(exc)}")
    return ApiFailure(UNKNOWN, f"{type(exc).__name__}: {_first_line(exc)}")


def api_cause(exc: BaseException) -> str:
    """One line naming why a client call failed, for a GatherError or a check message."""
    failure = failure_from_exception(exc)
    status = f" (HTTP {failure.http_status})" if failure.http_status else ""
    return f"{failure.kind.replace('_', ' ')}{status}: {failure.message}"


def user_error(failure: ApiFailure, what: str, *, identity: Any = None, bucket: str | None = None,
               project: str | None = None, zone: str | None = None, permission: str | None = None,
               alternative: str | None = None) -> InputError:
    """The one mapping from a failed call to an error a person reads: ``what`` failed, why, and the fix.

    ``bucket`` names a Cloud Storage bucket (a grant on the bucket fixes a 403); otherwise the grant is on
    ``project``. ``permission`` is what the call needed, where the server's answer names none;
    ``identity`` (``tpudoctor.gcp.credentials.Identity``) is who was refused. ``alternative`` is another way
    round the failure, added to the hint.
    """
    from tpudoctor.cloud_knowledge import gcloud

    if failure.kind == PERMISSION_DENIED:
        needed = failure.permission or permission
        role = failure.role or role_for(needed) or "a role that grants it"
        who = (identity and identity.principal) or "the caller"
        member = identity.iam_member if identity else None
        grant = (gcloud.bucket_role_binding(bucket, member, role) if bucket
                 else gcloud.project_role_binding(project, member, role))
        message = f"{what}: permission denied: {who} lacks {needed or 'the permission'} (granted by {role})"
        hint = f"grant it: {grant}"
    elif failure.kind == NO_CREDENTIALS:
        message = f"{what}: no Google Cloud credentials: {failure.message}"
        hint = " or ".join(ADC_SETUP_COMMANDS)
    elif failure.kind == NOT_FOUND:
        message = f"{what}: not found ({failure.message})"
        hint = ("check the bucket and path (gcloud storage ls gs://BUCKET/PATH)" if bucket
                else f"check the name, project and zone ({gcloud.tpu_vm('list', None, zone, project)})")
    else:
        tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
        message = f"{what}: {failure.kind.replace('_', ' ')}{tries}: {failure.message}"
        hint = ("check the path, your network and that your credentials can read the bucket" if bucket
                else "check your network and the endpoint; raise --api-timeout if the network is slow")
    return InputError(message, hint=f"{hint}; or {alternative}" if alternative else hint)


_KIND_FOR_STATUS = {
    400: BAD_REQUEST,
    401: NO_CREDENTIALS,
    403: PERMISSION_DENIED,
    404: NOT_FOUND,
    408: TIMEOUT,
    429: RATE_LIMITED,
    504: TIMEOUT,
}


def call_with_retries(
    fn: Callable[[], T],
    *,
    permission: str | None = None,
    attempts: int = 3,
    backoff_s: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn``; retry 429 and 5xx with doubling backoff; raise ``ApiCallFailed`` at the end.

    Timeouts are not retried: the caller's per-call timeout is the user's patience already.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - mapped to a record, never re-raised raw
            failure = failure_from_exception(exc, permission=permission)
            if failure.retryable and attempt < attempts:
                sleep(backoff_s * 2 ** (attempt - 1))
                continue
            raise ApiCallFailed(dataclasses.replace(failure, attempts=attempt)) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def _strip_url(text: str) -> str:
    """api_core prefixes REST errors with 'GET http://...: '; the method and URL are noise here."""
    return re.sub(r"^(GET|POST|PUT|PATCH|DELETE) \S+: ", "", text.strip())[:500]


def _connection_reason(exc: BaseException) -> str:
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "host name does not resolve"),
        ("nodename nor servname", "host name does not resolve"),
        ("Temporary failure in name resolution", "host name does not resolve"),
        ("Network is unreachable", "network is unreachable"),
    ):
        if needle in text:
            return reason
    return _first_line(exc)
