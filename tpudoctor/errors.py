"""Errors that end a command with a clear message instead of a traceback."""

from __future__ import annotations

from tpudoctor.exitcodes import ExitCode


class TpudoctorError(Exception):
    """An expected failure with a message for a person and an exit code.

    ``hint`` is what to do about it; it is printed apart from the message.
    """

    exit_code: ExitCode = ExitCode.USAGE_ERROR

    def __init__(self, message: str, *, hint: str | None = None, exit_code: ExitCode | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(TpudoctorError):
    """Bad flags or configuration (exit 2)."""


class InputError(TpudoctorError):
    """An input file or path that cannot be used: missing, empty, corrupt (exit 2)."""
