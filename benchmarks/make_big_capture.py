"""Build a larger XSpace from a real one: every line's events repeated N times, later copies
shifted in time by the line's span, so the result looks like a longer capture of the same job.

    python benchmarks/make_big_capture.py SOURCE.xplane.pb N OUT.xplane.pb
"""

from __future__ import annotations

import sys
from pathlib import Path


def scale_capture(source: Path, factor: int, target: Path) -> int:
    """Write the scaled capture to ``target``; returns its number of events."""
    from tpudoctor.profile.schema import message_class

    space = message_class("XSpace").FromString(source.read_bytes())
    total = 0
    for plane in space.planes:
        for line in plane.lines:
            originals = list(line.events)
            if not originals:
                continue
            span_ps = max(e.offset_ps + e.duration_ps for e in originals) - min(e.offset_ps for e in originals) + 1
            for copy in range(1, factor):
                for event in originals:
                    new = line.events.add()
                    new.CopyFrom(event)
                    if event.WhichOneof("data") == "offset_ps":
                        new.offset_ps = event.offset_ps + copy * span_ps
            total += len(line.events)
    target.write_bytes(space.SerializeToString())
    return total


if __name__ == "__main__":
    count = scale_capture(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
    print(f"{sys.argv[3]}: {count} events, {Path(sys.argv[3]).stat().st_size:,} bytes")
