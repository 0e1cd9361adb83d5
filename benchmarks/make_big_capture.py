"""Build a larger XSpace from a real one: every line's events repeated N times, later copies
shifted in time by the line's span, so the result looks like a longer capture of the same job.

    python benchmarks/make_big_capture.py SOURCE.xplane.pb N OUT.xplane.pb

The output is written plane by plane and built line by line from the lines' bytes, so memory
follows the largest line, not the output: a 1 GB capture (N about 1250 for the v6e capture) is
built in a few GB.
"""

from __future__ import annotations

import sys
from pathlib import Path


def scale_capture(source: Path, factor: int, target: Path) -> int:
    """Write the scaled capture to ``target``; returns its number of events."""
    from tpudoctor.captures.schema import message_class

    raw_space = message_class("XSpace", raw=True)
    raw_line = message_class("XLine", raw=True)
    event_class = message_class("XEvent")
    space = raw_space.FromString(source.read_bytes())
    total = 0
    with open(target, "wb") as out:
        for plane in space.planes:
            lines = []
            for line_bytes in plane.lines:
                line = raw_line.FromString(line_bytes)
                originals = [event_class.FromString(e) for e in line.events]
                if originals:
                    copies = list(_scaled_events(originals, factor))
                    del line.events[:]
                    line.events.extend(copies)
                    total += len(copies)
                    del copies
                lines.append(line.SerializeToString())
            del plane.lines[:]
            plane.lines.extend(lines)
            _write_field(out, 1, plane.SerializeToString())  # XSpace.planes
            del lines
        rest = raw_space()
        rest.CopyFrom(space)
        del rest.planes[:]
        out.write(rest.SerializeToString())  # errors, warnings, hostnames: after the planes, as written
    return total


def _scaled_events(originals, factor: int):
    """Each event's bytes, then ``factor - 1`` copies of the line shifted by its span each time."""
    span_ps = max(e.offset_ps + e.duration_ps for e in originals) - min(e.offset_ps for e in originals) + 1
    for event in originals:
        yield event.SerializeToString()
    for copy in range(1, factor):
        for event in originals:
            if event.WhichOneof("data") != "offset_ps":
                yield event.SerializeToString()
                continue
            offset = event.offset_ps
            event.offset_ps = offset + copy * span_ps
            yield event.SerializeToString()
            event.offset_ps = offset


def _write_field(out, number: int, payload: bytes) -> None:
    from tpudoctor.captures.wire import encode_varint

    out.write(encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload)


if __name__ == "__main__":
    count = scale_capture(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
    print(f"{sys.argv[3]}: {count} events, {Path(sys.argv[3]).stat().st_size:,} bytes")
