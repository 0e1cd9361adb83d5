"""Process exit codes, one meaning each (pytest's ``ExitCode`` style)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    """Nothing at or above the fail level; no regression."""
    FINDINGS = 1
    """A check found a problem at or above ``--fail-on``, or a performance regression."""
    USAGE_ERROR = 2
    """Bad flags, a bad config file, unreadable or invalid input, a missing or mismatched baseline."""
    INTERNAL_ERROR = 3
    """tpudoctor itself broke. Never a statement about the user's TPU."""
