"""Adapters over the Google Cloud client libraries: every call has a timeout and a bounded retry,
and every failure comes back as an ``ApiFailure`` record instead of an exception."""
