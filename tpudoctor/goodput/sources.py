"""Opening the logs to read: files (plain or ``.gz``) and standard input, as bounded text lines.

A file that is binary (NUL bytes in its first 8 KiB) or empty is said so, clearly; bytes that are not
UTF-8 are read as U+FFFD and counted, so a log with a stray Latin-1 byte still reads.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import sys
from collections.abc import Iterator

from tpudoctor.errors import InputError
from tpudoctor.logdiag.events import LinePiece, bounded_lines
from tpudoctor.logdiag.reading import binary_reason

PEEK_BYTES = 8192


@dataclasses.dataclass
class SourceInfo:
    name: str
    lines: int = 0
    bytes_read: int | None = None
    non_utf8_lines: int = 0
    problem: str | None = None
    first_t: float | None = None
    last_t: float | None = None
    timed_events: int = 0
    year_source: str | None = None
    by_worker: dict = dataclasses.field(default_factory=dict)
    """Labelled worker -> [first, last] time of its lines."""

    def to_dict(self) -> dict:
        return {"source": self.name, "lines": self.lines, "timed_events": self.timed_events,
                "non_utf8_lines": self.non_utf8_lines, "problem": self.problem, "year_from": self.year_source}


def open_binary(path: str):
    """A binary handle on ``path`` (``-``: standard input), gunzipped when it ends in ``.gz``."""
    if path == "-":
        return sys.stdin.buffer
    try:
        if os.path.isdir(path):
            raise InputError(f"{path} is a directory, not a log file", hint="give the log files inside it")
        handle = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except FileNotFoundError:
        raise InputError(f"log {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read log {path}: {exc.strerror or exc}") from None
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=handle)
    return handle


def text_lines(binary, info: SourceInfo) -> Iterator[str]:
    """Lines of a binary handle as text, bounded in length; sets ``info.problem`` for binary or empty input."""
    buffered = binary if hasattr(binary, "peek") else io.BufferedReader(binary)
    try:
        head = buffered.peek(PEEK_BYTES)[:PEEK_BYTES]
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        info.problem = f"cannot be read: {exc}"
        return
    if not head:
        info.problem = "empty"
        return
    binary_problem = binary_reason(head)
    if binary_problem is not None:
        info.problem = f"binary, {binary_problem}"
        return
    text = io.TextIOWrapper(buffered, encoding="utf-8", errors="replace", newline=None)
    try:
        for line in bounded_lines(text):
            if isinstance(line, LinePiece):  # a further window of an overlong line: no step line is that long
                continue
            if "\ufffd" in line:
                info.non_utf8_lines += 1
            yield line
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        info.problem = f"stopped reading: {exc}"
    finally:
        text.detach()
