"""A large local XSpace file read plane by plane: the file's bytes and protobuf's parse are held
for one plane (and one line of it) at a time, never for the whole file; but for the lines kept between the
decoder's two reads of them (``HELD_LINES_BYTES`` in all).

``layout`` finds the planes from the file's top-level fields; ``planes_on_disk`` gives each plane's
header as a parsed message with its lines left in the file, as ``decoder.XSpaceDecoder`` reads them.
"""

from __future__ import annotations

from collections.abc import Iterator

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.errors import InputError


def planes_on_disk(handle, source: str, planes: list[tuple[int, int]]) -> Iterator[_PlaneOnDisk]:
    """Each plane at (offset, length) of the open file (``CaptureFile``), its header parsed and its lines left on
    disk."""
    plane_class = message_class("XPlane", raw=True)
    for offset, length in planes:
        header_spans, line_spans = _plane_layout(handle, offset, length)
        try:
            header = plane_class.FromString(_read_spans(handle, header_spans))
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
            raise InputError(f"{source} is a corrupt XSpace profile: the plane at byte {offset:,} "
                             "does not decode", hint="the file was damaged after it was written; copy it "
                             "again as binary or recapture") from exc
        yield _PlaneOnDisk(header, _LinesOnDisk(handle, line_spans))


class CaptureFile:
    """A capture file opened once for a whole load, its first bytes (``head``, read first for the format checks)
    served from memory: the layout walk, the planes and their lines read the rest. The decoder reads every line
    twice (headers, then events): the lines read first are kept for the second read, ``HELD_LINES_BYTES`` in all,
    so that a capture of tens of MB is read once (57 MB GPU capture: the load's CPU 0.167 -> 0.155 s, medians of
    6 processes; ``profile analyze`` 0.474 -> 0.459 s, peak RSS 175 -> 173 MB, the peak being the analyses')."""

    def __init__(self, handle, head: bytes):
        self._handle, self._head, self._position = handle, head, 0
        self._held: dict[int, bytes] = {}  # line offset -> its bytes
        self._hold_left = HELD_LINES_BYTES

    def seek(self, position: int) -> None:
        self._position = position

    def read(self, size: int) -> bytes:
        start, end = self._position, self._position + size
        if end <= len(self._head):
            data = self._head[start:end]
        else:
            data = self._head[start:] if start < len(self._head) else b""
            self._handle.seek(start + len(data))
            data += self._handle.read(end - start - len(data))
        self._position = start + len(data)
        return data

    def read_line(self, offset: int, length: int) -> bytes:
        """A line's bytes: kept from its first read (and no longer kept), else read, and kept while there is room."""
        data = self._held.pop(offset, None)
        if data is None:
            self.seek(offset)
            data = self.read(length)
            if length <= self._hold_left:
                self._held[offset] = data
                self._hold_left -= length
        return data

    def drop_held(self) -> None:
        """Nothing kept any more (the lines a selection read once)."""
        self._held.clear()
        self._hold_left = 0


HELD_LINES_BYTES = 64 << 20  # lines kept between the decoder's two reads; more are read from the file again


def layout(handle, size: int) -> tuple[list[tuple[int, int]], list[str], list[str]] | None:
    """(plane byte ranges, errors, warnings) of an XSpace file, from its top-level fields (all
    length-delimited: 1 planes, 2 errors, 3 warnings, 4 hostnames); None when the layout is not that."""
    planes, errors, warnings = [], [], []
    position = 0
    handle.seek(0)
    while position < size:
        head = handle.read(20)
        tag, used = wire.read_varint(head, 0)
        length, used = wire.read_varint(head, used) if tag is not None else (None, used)
        if tag is None or length is None or tag & 7 != 2 or tag >> 3 not in (1, 2, 3, 4):
            return None
        start = position + used
        if start + length > size:
            return None
        if tag >> 3 == 1:
            planes.append((start, length))
        elif tag >> 3 in (2, 3):
            handle.seek(start)
            (errors if tag >> 3 == 2 else warnings).append(handle.read(length).decode("utf-8", errors="replace"))
        position = start + length
        handle.seek(position)
    return (planes, errors, warnings) if planes else None



class _LinesOnDisk:
    """A plane's lines as bytes, each read from the file when iterated (or kept from its first read,
    ``CaptureFile.read_line``): a big plane is never held whole."""

    def __init__(self, handle, spans: list[tuple[int, int]]):
        self.handle, self.spans = handle, spans

    def __len__(self) -> int:
        return len(self.spans)

    def __iter__(self):
        for offset, length in self.spans:
            yield self.handle.read_line(offset, length)


class _PlaneOnDisk:
    """An XPlane's header (parsed: ids, names, metadata, stats) with its lines left in the file."""

    def __init__(self, header, lines: _LinesOnDisk):
        self.id, self.name, self.stats = header.id, header.name, header.stats
        self.event_metadata, self.stat_metadata = header.event_metadata, header.stat_metadata
        self.lines = lines


_PLANE_LINES = 3  # XPlane.lines
_LINES_TAG = _PLANE_LINES << 3 | wire.WIRE_LEN


LAYOUT_WINDOW = 1 << 16  # bytes read at a time while a plane's fields are walked (a seek and read per field: 0.05 s on 57 MB)


def _plane_layout(handle, offset: int, length: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(spans of the plane's fields other than its lines, spans of its lines' payloads) in the file,
    adjacent header fields merged into one span; ``WireError`` where the fields do not add up. The
    fields' heads are read from a window of the file, read again only where a field (a line) leaves it."""
    header: list[tuple[int, int]] = []
    lines: list[tuple[int, int]] = []
    position, end = offset, offset + length
    window, window_start = b"", offset
    while position < end:
        at = position - window_start
        if at + 20 > len(window) and window_start + len(window) < end:  # a field head may cross the window's end
            handle.seek(position)
            window, window_start, at = handle.read(min(LAYOUT_WINDOW, end - position)), position, 0
        if at < len(window) and window[at] < 0x80:  # a one-byte tag, as every XPlane field's is
            tag, used = window[at], at + 1
        else:
            tag, used = wire.read_varint(window, at)
        if tag is None or tag >> 3 == 0:
            raise wire.WireError(f"the plane at byte {offset:,} has a malformed field")
        value = 0
        if tag & 7 in (wire.WIRE_VARINT, wire.WIRE_LEN):
            if used + 1 < len(window) and window[used] >= 0x80 > window[used + 1]:  # most metadata entries' lengths
                value, used = (window[used] & 0x7F) | window[used + 1] << 7, used + 2
            else:
                value, used = wire.read_varint(window, used)
        if value is None or tag & 7 not in (wire.WIRE_VARINT, wire.WIRE_LEN, wire.WIRE_FIXED64, wire.WIRE_FIXED32):
            raise wire.WireError(f"the plane at byte {offset:,} has a malformed field")
        payload_start = window_start + used
        if tag & 7 == wire.WIRE_LEN:
            field_end = payload_start + value
        else:
            field_end = payload_start + {wire.WIRE_VARINT: 0, wire.WIRE_FIXED64: 8, wire.WIRE_FIXED32: 4}[tag & 7]
        if field_end > end:
            raise wire.WireError(f"a field of the plane at byte {offset:,} runs past the plane")
        if tag == _LINES_TAG:
            lines.append((payload_start, field_end - payload_start))
            position = field_end
            continue
        if header and header[-1][0] + header[-1][1] == position:
            header[-1] = (header[-1][0], field_end - header[-1][0])
        else:
            header.append((position, field_end - position))
        position = _header_run_end(window, window_start, field_end, end)
        header[-1] = (header[-1][0], position - header[-1][0])
    return header, lines


def _header_run_end(window: bytes, window_start: int, position: int, end: int) -> int:
    """Where the run of length-delimited header fields (the metadata map's entries: thousands) from
    ``position`` stops: fields with a one-byte tag and a length of one or two bytes, walked in place;
    any other field, or one that leaves the window or the plane, is left to ``_plane_layout``."""
    at = position - window_start
    limit = min(len(window), end - window_start) - 3
    while at <= limit:
        tag = window[at]
        if tag == _LINES_TAG or tag & 7 != wire.WIRE_LEN or tag < 8 or tag >= 0x80:
            break
        low = window[at + 1]
        if low < 0x80:
            after = at + 2 + low
        else:
            high = window[at + 2]
            if high >= 0x80:
                break
            after = at + 3 + ((low & 0x7F) | high << 7)
        if window_start + after > end:
            break
        at = after
    return window_start + at


def _read_spans(handle, spans: list[tuple[int, int]]) -> bytes:
    parts = []
    for start, length in spans:
        handle.seek(start)
        parts.append(handle.read(length))
    return b"".join(parts)

