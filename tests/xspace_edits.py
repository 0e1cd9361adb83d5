"""Documented, real-schema edits of real captures, for tests that need two captures differing in one op.

No pair of real captures here differs in exactly one op, so the second capture of a pair is the
first one with every execution of one HLO op made longer (``XEvent.duration_ps`` and, on TPU, the
``device_duration_ps`` stat scaled) or removed.
"""

from __future__ import annotations

import re
from pathlib import Path

from tpudoctor.captures.schema import message_class


def edited(src: Path, dst: Path, op: str, *, factor: float | None = None, remove: bool = False) -> Path:
    """``src`` with every execution of HLO op ``op`` scaled by ``factor`` or removed (real schema)."""
    space = message_class("XSpace").FromString(src.read_bytes())
    pattern = re.compile(rf"^%?{re.escape(op)}(?: = |$)")
    touched = 0
    for plane in space.planes:
        ids = {k for k, m in plane.event_metadata.items() if pattern.match(m.name)}
        device_duration = {k for k, m in plane.stat_metadata.items() if m.name == "device_duration_ps"}
        for line in plane.lines:
            kept = []
            for event in line.events:
                if event.metadata_id not in ids:
                    kept.append(event)
                    continue
                touched += 1
                if remove:
                    continue
                event.duration_ps = int(event.duration_ps * factor)
                for stat in event.stats:
                    if stat.metadata_id in device_duration:
                        field = stat.WhichOneof("value")
                        setattr(stat, field, type(getattr(stat, field))(getattr(stat, field) * factor))
                kept.append(event)
            if remove and len(kept) != len(line.events):
                del line.events[:]
                line.events.extend(kept)
    assert touched, f"{op} not found in {src}"
    dst.write_bytes(space.SerializeToString())
    return dst
