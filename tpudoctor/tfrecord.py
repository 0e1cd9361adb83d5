"""TFRecord framing: write records and validate the framing of a file's first bytes. Pure.

A record is ``uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)``,
little-endian; the mask is ``((crc >> 15) | (crc << 17)) + 0xa282ead8`` mod 2**32.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

import google_crc32c

_MASK_DELTA = 0xA282EAD8
HEADER_BYTES = 12
FOOTER_BYTES = 4


def masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


def encode_records(records: list[bytes]) -> bytes:
    return b"".join(frame_record(r) for r in records)


@dataclasses.dataclass
class FramingScan:
    verdict: str
    """valid | corrupt | not_tfrecord | gzip_tfrecord | empty"""
    records_checked: int = 0
    bytes_checked: int = 0
    problem: str | None = None
    problem_offset: int | None = None
    detected_format: str | None = None
    truncated_record: bool = False
    """The last record runs past the bytes read; its data CRC was not checked."""


_MAGIC = (
    (b"PAR1", "Parquet"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x93NUMPY", "NumPy .npy"),
    (b"\x89HDF", "HDF5"),
    (b"ARROW1", "Arrow IPC"),
    (b"BZh", "bzip2 archive"),
)


def detect_format(head: bytes) -> str | None:
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    if head[:1] in (b"{", b"["):
        return "JSON"
    sample = head[:512]
    if sample and all(32 <= b < 127 or b in (9, 10, 13) for b in sample):
        return "text (CSV or plain text)"
    return None


def scan_framing(head: bytes, *, max_records: int = 16, at_eof: bool = False) -> FramingScan:
    """Validate up to ``max_records`` records in ``head`` (the first bytes of a file).

    ``at_eof``: ``head`` is the whole file, so a short tail is corruption, not a cut-off read.
    """
    if not head:
        return FramingScan("empty")
    if head[:2] == b"\x1f\x8b":
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 20)
        except zlib.error:
            inner = b""
        scan = scan_framing(inner, max_records=max_records) if inner else FramingScan("not_tfrecord")
        if scan.verdict == "valid":
            return dataclasses.replace(scan, verdict="gzip_tfrecord", detected_format="GZIP-compressed TFRecord")
        return FramingScan("not_tfrecord", detected_format="gzip archive")
    offset = 0
    checked = 0
    while checked < max_records and offset < len(head):
        if len(head) - offset < HEADER_BYTES:
            if checked == 0 and at_eof:
                return FramingScan("not_tfrecord", problem="shorter than one TFRecord header",
                                   problem_offset=0, detected_format=detect_format(head))
            if at_eof:
                return _broken(checked, offset, f"{len(head) - offset} stray bytes at the end of the file")
            return FramingScan("valid", checked, offset, truncated_record=True)
        length_bytes = head[offset:offset + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", head[offset + 8:offset + 12])
        if masked_crc32c(length_bytes) != length_crc:
            if checked == 0:
                return FramingScan("not_tfrecord", problem="the first 12 bytes are not a TFRecord length header",
                                   problem_offset=0, detected_format=detect_format(head))
            return _broken(checked, offset, f"record {checked + 1}: length checksum mismatch")
        end = offset + HEADER_BYTES + length + FOOTER_BYTES
        if end > len(head):
            if at_eof:
                return _broken(checked, offset, f"record {checked + 1} claims {length} bytes but the file ends first")
            return FramingScan("valid", checked, offset, truncated_record=True)
        data = head[offset + HEADER_BYTES:offset + HEADER_BYTES + length]
        (data_crc,) = struct.unpack("<I", head[end - FOOTER_BYTES:end])
        if masked_crc32c(data) != data_crc:
            return _broken(checked, offset, f"record {checked + 1}: data checksum mismatch ({length} bytes)")
        checked += 1
        offset = end
    return FramingScan("valid", checked, offset)


def _broken(checked: int, offset: int, problem: str) -> FramingScan:
    return FramingScan("corrupt", checked, offset, problem=problem, problem_offset=offset)
