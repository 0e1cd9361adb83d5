"""Opening logs to read, for every reader: files (plain or ``.gz``), folders of logs, standard input, FIFOs and
``<(cmd)``, as bounded text lines, each source told apart as text, empty, binary or unreadable first.

Bounded: a line longer than ``MAX_LINE_CHARS`` is read in windows of that size that overlap by
``WINDOW_OVERLAP`` characters (``LinePiece``), so every match shorter than the overlap lies whole in one
window and a 1 GB line needs no more memory than a short one. Bytes that are not UTF-8 are read as U+FFFD,
so a log with a stray Latin-1 byte still reads. A source is peeked, never rewound: FIFOs and pipes read once.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from tpudoctor.errors import InputError

SNIFF_BYTES = 8192
MAX_FOLDER_FILES = 200
MAX_LINE_CHARS = 16384
WINDOW_OVERLAP = 1024
_TEXT_CONTROLS = {9, 10, 12, 13, 27, 8}  # tab, newline, form feed, carriage return, ESC (colours), backspace


class LinePiece(str):
    """A further window of an overlong line: it carries the line before it on (same line number)."""

    __slots__ = ()


def windows(line: str, size: int = MAX_LINE_CHARS) -> Iterator[str]:
    """An overlong line held in memory as its first ``size`` characters, then overlapping ``LinePiece``s."""
    yield line[:size]
    step = size - WINDOW_OVERLAP
    for start in range(step, len(line) - WINDOW_OVERLAP, step):
        yield LinePiece(line[start:start + size])


def bounded_lines(handle, max_chars: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of a text stream, an overlong one as overlapping windows *while reading*: iterating
    a file reads a whole line first, so one 1 GB line without a newline (a binary blob) took 2 GB."""
    while True:
        line = handle.readline(max_chars)
        if not line:
            return
        yield line
        while len(line) >= max_chars and not line.endswith("\n"):
            more = handle.readline(max_chars - WINDOW_OVERLAP)
            if not more:
                return
            line = LinePiece(line[-WINDOW_OVERLAP:] + more)
            yield line


def binary_reason(head: bytes) -> str | None:
    """Why the first bytes of a source are not a text log, or None when they look like one."""
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"holds NUL bytes (the first at byte {nul}): not a text log"
    controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
    if head and controls > len(head) // 10:
        return f"{100 * controls // len(head)}% of its first {len(head):,} bytes are control characters: not a text log"
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    if head and undecodable > len(head) // 10:
        return f"{undecodable:,} of its first {len(head):,} bytes are not UTF-8: not a text log"
    return None


@dataclasses.dataclass(frozen=True)
class Sniffed:
    """What the first bytes of a source say it is."""

    state: str
    """``text``, ``empty`` (no byte at all), ``binary`` (not a text log) or ``unreadable``."""
    reason: str | None = None


def buffered(stream: BinaryIO) -> io.BufferedReader:
    return stream if hasattr(stream, "peek") else io.BufferedReader(stream, 1 << 16)  # type: ignore[return-value,arg-type]


def sniff(stream: io.BufferedReader) -> Sniffed:
    """Peek at a buffered stream (nothing is consumed) and say whether it is a text log."""
    try:
        head = stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return Sniffed("unreadable", f"cannot be read: {exc}")
    if not head:
        return Sniffed("empty", "is empty: there is nothing to read")
    reason = binary_reason(head)
    return Sniffed("binary", reason) if reason is not None else Sniffed("text")


def decoded_lines(stream: io.BufferedReader) -> Iterator[str]:
    """The bounded text lines of a sniffed stream; the stream stays open (the caller closes it)."""
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline=None)
    try:
        yield from bounded_lines(text)
    finally:
        text.detach()


BLOCK_BYTES = 1 << 20


def byte_blocks(stream: io.BufferedReader, *, block_bytes: int = BLOCK_BYTES,
                max_line_bytes: int = MAX_LINE_CHARS) -> Iterator[bytes]:
    """The bytes of a stream as blocks of whole lines (the last may lack its newline). A line longer than
    ``max_line_bytes`` keeps only its first ``max_line_bytes`` (readers that need all of an overlong line read
    ``bounded_lines``), so memory stays bounded by the block size."""
    carry = b""
    skipping = False  # inside the rest of an overlong line
    while True:
        chunk = stream.read(block_bytes)
        if not chunk:
            break
        if skipping:
            cut = chunk.find(b"\n")
            if cut < 0:
                continue
            chunk, skipping = chunk[cut + 1:], False
        data = carry + chunk if carry else chunk
        last = data.rfind(b"\n")
        if last < 0:
            if len(data) > max_line_bytes:
                yield data[:max_line_bytes] + b"\n"
                carry, skipping = b"", True
            else:
                carry = data
            continue
        carry = data[last + 1:]
        if len(carry) > max_line_bytes:
            carry, skipping = carry[:max_line_bytes], True
            yield data[:last + 1] + carry + b"\n"
            carry = b""
            continue
        yield data[:last + 1]
    if carry:
        yield carry


class _Chained(io.RawIOBase):
    """Bytes already read, then the rest of a stream: hands a stream over to a line reader mid-way."""

    def __init__(self, head: bytes, rest: io.BufferedReader):
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def blocks_then_lines(stream: io.BufferedReader, *, block_bytes: int = BLOCK_BYTES,
                      max_line_bytes: int = MAX_LINE_CHARS) -> Iterator[bytes | str]:
    """Blocks of whole lines as bytes while the lines are short; from the first line longer than
    ``max_line_bytes`` on, bounded text lines (``bounded_lines``: an overlong line in overlapping windows)."""
    carry = b""
    while True:
        chunk = stream.read(block_bytes)
        if not chunk:
            break
        data = carry + chunk if carry else chunk
        last = data.rfind(b"\n")
        if len(data) - last - 1 > max_line_bytes:  # an overlong line: read the rest line by line, in windows
            if last >= 0:
                yield data[:last + 1]
            yield from decoded_lines(io.BufferedReader(_Chained(data[last + 1:], stream)))
            return
        carry = data[last + 1:]
        if last >= 0:
            yield data[:last + 1]
    if carry:
        yield carry


_NEWLINE = re.compile(r"\r\n|\r|\n")  # as universal newlines read them


def split_lines(block: bytes) -> list[str]:
    """A block of whole lines (raw bytes) as text lines, split as universal newlines split them."""
    text = block.decode("utf-8", errors="replace")
    if not text:
        return []
    parts = _NEWLINE.split(text)
    return parts[:-1] if parts[-1] == "" else parts


def count_lines(block: bytes) -> int:
    """Lines in a block as universal newlines count them (a bare carriage return ends a line too)."""
    n = block.count(b"\n")
    if b"\r" in block:
        n += block.count(b"\r") - block.count(b"\r\n")
    if block and not block.endswith((b"\n", b"\r")):
        n += 1
    return n


def open_binary(path: str) -> BinaryIO:
    """A binary handle on ``path`` (``-``: standard input), gunzipped when it ends in ``.gz``; ``InputError``
    with the reason when it cannot be opened."""
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
        return GzipUpToCut(handle)
    return handle


class GzipUpToCut(io.BufferedReader):
    """A .gz file read up to where it was cut: a copy stopped short or a log still being written gives the lines
    before the cut, and ``cut`` says so, where ``gzip.GzipFile`` refuses the whole file. A corrupt stream is still
    an error (``gzip.BadGzipFile``)."""

    def __init__(self, handle: BinaryIO):
        self._inflater = _Inflater(handle)
        super().__init__(self._inflater, 1 << 16)

    @property
    def cut(self) -> str | None:
        return self._inflater.cut

    def close(self) -> None:
        super().close()
        self._inflater.handle.close()


class _Inflater(io.RawIOBase):
    OUT_BYTES = 1 << 20
    """At most this much out per call: a small, highly compressed input does not come out all at once."""

    def __init__(self, handle: BinaryIO):
        import zlib

        self.handle, self._zlib = handle, zlib
        self._new_member()
        self.feed = b""
        self.cut: str | None = None
        self.finished = False
        self.member_bytes = 0

    def _new_member(self) -> None:
        self.inflate = self._zlib.decompressobj(16 + self._zlib.MAX_WBITS)  # gzip header and trailer

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while not self.finished:
            if self.inflate.eof:  # a member ended: another may follow (concatenated .gz)
                self.feed = self.inflate.unused_data + self.feed
                self._new_member()
                self.member_bytes = 0
            if not self.feed and not self.inflate.unconsumed_tail:
                self.feed = self.handle.read(1 << 16)
                if not self.feed:
                    self.finished = True
                    if self.member_bytes:
                        self.cut = "was cut short (the compressed stream ends before its end marker)"
                    break
            data = self.inflate.unconsumed_tail or self.feed
            if not self.inflate.unconsumed_tail:
                self.feed = b""
            try:
                out = self.inflate.decompress(data, min(len(buffer), self.OUT_BYTES))
            except self._zlib.error as exc:
                raise gzip.BadGzipFile(f"not a readable gzip stream: {exc}") from None
            self.member_bytes += len(data) - len(self.inflate.unconsumed_tail)
            if out:
                buffer[:len(out)] = out
                return len(out)
        return 0


def expand(path: str) -> list[str]:
    """The sources ``path`` names: itself, or the files of a folder (sorted, hidden ones left out, at most
    ``MAX_FOLDER_FILES``); an empty list for a folder without files."""
    if path != "-" and os.path.isdir(path):
        files = sorted(p for p in Path(path).iterdir() if p.is_file() and not p.name.startswith("."))
        return [str(p) for p in files[:MAX_FOLDER_FILES]]
    return [path]


def readable_problem(path: str) -> str | None:
    """Why ``path`` cannot be read as a log here (missing, unreadable), or None. Any readable stream is fine."""
    if path == "-":
        return None
    if not os.path.exists(path):
        return "no such file or folder"
    if not os.access(path, os.R_OK):
        return "not readable (check its permissions)"
    return None


GZIP_MAGIC = b"\x1f\x8b"


@dataclasses.dataclass(frozen=True)
class TextCaps:
    """How much one log may give: ``max_bytes`` read (or decompressed), and a gzip stream no more than
    ``max_gzip_ratio`` times its own size once past ``gzip_bomb_min_bytes``; ``hint`` says what to pass instead."""

    max_bytes: int
    max_gzip_ratio: int
    gzip_bomb_min_bytes: int
    hint: str


def capped_stream(stream: BinaryIO, source: str, caps: TextCaps) -> tuple[io.BufferedReader, bool]:
    """(a buffered stream of ``stream``'s text, whether it was gzip): gzip told by its magic bytes (a ``.gz``
    name or not, standard input too), the bytes read and decompressed capped (``InputError`` past the caps,
    raised as they are read), so that a log too big or a gzip bomb is refused, not read into memory for minutes."""
    raw = _Capped(stream, source, caps)
    handle = buffered(raw)  # type: ignore[arg-type]
    if handle.peek(2)[:2] != GZIP_MAGIC:
        return handle, False
    return buffered(_Capped(gzip.GzipFile(fileobj=handle), source, caps, raw)), True  # type: ignore[arg-type]


class _Capped(io.RawIOBase):
    """A byte stream that refuses to give more than ``caps.max_bytes``, or (decompressed) more than
    ``caps.max_gzip_ratio`` times what its compressed source gave."""

    def __init__(self, stream, source: str, caps: TextCaps, compressed: _Capped | None = None):
        self._stream, self._source, self._caps, self._compressed, self.count = stream, source, caps, compressed, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        data = self._stream.read(len(buffer))
        self.count += len(data)
        caps = self._caps
        if self.count > caps.max_bytes:
            raise InputError(f"{self._source} holds more than {caps.max_bytes >> 30} GiB of text"
                             + (" once decompressed" if self._compressed is not None else ""), hint=caps.hint)
        if (self._compressed is not None and self.count > caps.gzip_bomb_min_bytes
                and self.count > caps.max_gzip_ratio * max(self._compressed.count, 1)):
            raise InputError(f"{self._source} decompresses to more than {caps.max_gzip_ratio} times its size "
                             f"({self.count >> 20:,} MiB from {self._compressed.count >> 10:,} KiB so far): a gzip "
                             "bomb, not a log")
        buffer[:len(data)] = data
        return len(data)
