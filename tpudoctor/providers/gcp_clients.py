"""Moved to ``tpudoctor.gcp.clients``; kept so existing imports still work."""

from tpudoctor.gcp.clients import (  # noqa: F401
    LOGGING_ENDPOINT_ENV,
    MONITORING_ENDPOINT_ENV,
    NoCredentials,
    caller_credentials,
    logging_client,
    monitoring_client,
)
