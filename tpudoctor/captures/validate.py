"""Say precisely why a file is not a usable XSpace capture (each cause its own message)."""

from __future__ import annotations

from tpudoctor.captures.wire import read_varint
from tpudoctor.errors import InputError

REPLACEMENT_CHAR = b"\xef\xbf\xbd"  # U+FFFD in UTF-8: what a text-mode copy writes for every non-UTF-8 byte
# Share of the file made of U+FFFD above which the file was surely mangled by a text-mode copy
# (a real capture holds a few in strings at most; the corrupted upstream copy of the v6e capture
# is 57 % U+FFFD).
REPLACEMENT_SHARE = 0.02
GZIP_MAGIC = b"\x1f\x8b"
CAPTURE_HINT = "pass a <host>.xplane.pb written by the TensorFlow/JAX profiler"


SAMPLE_BYTES = 1 << 20  # a text-mode copy mangles the whole file alike: its head tells


def replacement_share(data: bytes) -> float:
    """Share of U+FFFD in the file's first ``SAMPLE_BYTES``."""
    head = data[:SAMPLE_BYTES]
    return head.count(REPLACEMENT_CHAR) * len(REPLACEMENT_CHAR) / max(len(head), 1)


def _sampled(data: bytes) -> str:
    return "it" if len(data) <= SAMPLE_BYTES else "its first megabyte"


def check_bytes(data: bytes, source: str) -> None:
    """Reject inputs that fail before parsing: empty, text-mode-copy corruption, other formats."""
    if not data:
        raise InputError(
            f"{source} is empty (0 bytes)",
            hint="the profiler writes a 0-byte .xplane.pb when a capture passes protobuf's 2 GiB limit; "
                 "capture a shorter window (--duration), fewer steps, or with a lower host tracer level",
        )
    share = replacement_share(data)
    if share >= REPLACEMENT_SHARE:
        raise InputError(
            f"{source} was corrupted by a text-mode copy: {share:.0%} of {_sampled(data)} is the replacement character "
            f"U+FFFD (bytes EF BF BD), written where each non-UTF-8 byte used to be",
            hint="copy the file as binary (gsutil cp / git with the file marked binary, not a text editor "
                 "or a text-mode download) and capture again if no intact copy exists",
        )
    if data[:2] == GZIP_MAGIC:
        raise InputError(f"{source} is gzip-compressed, not an XSpace profile (a trace.json.gz?)", hint=CAPTURE_HINT)
    if data[:1] in (b"{", b"[") or data[:5] == b"<?xml" or data[:5].lower() == b"<html":
        raise InputError(f"{source} is a text document (JSON/XML/HTML), not an XSpace profile", hint=CAPTURE_HINT)


def explain_parse_failure(data: bytes, source: str) -> InputError:
    """Why protobuf could not parse ``data``: truncated, corrupted, or not an XSpace at all."""
    position, problem = _walk_top_level(data)
    if problem == "truncated":
        return InputError(
            f"{source} is truncated: the plane that starts near byte {position:,} needs more bytes "
            f"than the file's {len(data):,}",
            hint="the copy or the capture stopped early (full disk, interrupted upload); copy it again or recapture",
        )
    if problem == "not-xspace":
        return InputError(
            f"{source} is not an XSpace profile (its bytes do not start like an XSpace protobuf)",
            hint=CAPTURE_HINT,
        )
    share = replacement_share(data)
    detail = f"; {share:.1%} of {_sampled(data)} is U+FFFD, a sign of a text-mode copy" if share > 0.001 else ""
    return InputError(f"{source} is a corrupt XSpace profile: a plane inside it does not decode{detail}",
                      hint="the file was damaged after it was written; copy it again as binary or recapture")


def _walk_top_level(data: bytes) -> tuple[int, str | None]:
    """Walk XSpace's top-level fields (all length-delimited, numbers 1-4) without decoding them."""
    position = 0
    size = len(data)
    while position < size:
        tag, position = read_varint(data, position)
        if tag is None:
            return position, "truncated" if position >= size else "not-xspace"
        field, wire_type = tag >> 3, tag & 7
        if field not in (1, 2, 3, 4) or wire_type != 2:
            return position, "not-xspace"
        length, position = read_varint(data, position)
        if length is None:
            return position, "truncated"
        if position + length > size:
            return position, "truncated"
        position += length
    return position, None

