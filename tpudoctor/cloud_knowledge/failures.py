"""The kinds of failure a Google Cloud call ends in, as a check reads them from a fact's ``failure``."""

from __future__ import annotations

PERMISSION_DENIED = "permission_denied"
NOT_FOUND = "not_found"
RATE_LIMITED = "rate_limited"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
UNREACHABLE = "unreachable"
NO_CREDENTIALS = "no_credentials"
BAD_REQUEST = "bad_request"
MALFORMED = "malformed_answer"
TRUNCATED = "truncated_answer"
UNKNOWN = "unknown"

RETRYABLE_KINDS = frozenset({RATE_LIMITED, SERVER_ERROR})
"""Worth another attempt: the server was busy or broken for a moment."""
