"""A slow, obviously-correct XSpace reader for tests: the protobuf message classes, one event at a time."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_data import SHARED_DATA  # noqa: F401  (re-exported)

from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace import EVENT_STAT_COLUMNS

TPU_CAPTURE = "xprof_tpu_inference_2.xplane.pb"
GPU_CAPTURE = "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"


def shared_file(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real capture {path} is absent (../shared/data lives beside the checkout; not copied into the repo)")
    return path


def real_captures() -> list[Path]:
    if not SHARED_DATA.is_dir():
        return []
    return sorted(SHARED_DATA.glob("*.xplane.pb")) + sorted(SHARED_DATA.glob("*/*.xplane.pb"))


def _value(stat, names: dict[int, str]):
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return names.get(stat.ref_value)
    if which is None:
        return None
    return getattr(stat, which)


def oracle_events(data: bytes) -> list[dict]:
    """One dict per event, in file order: plane index, line id, ids, times and the stat columns."""
    space = message_class("XSpace").FromString(data)
    rows = []
    origin = min((line.timestamp_ns for plane in space.planes for line in plane.lines if len(line.events)), default=0)
    for plane_index, plane in enumerate(space.planes):
        names = {key: value.name for key, value in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                row = {
                    "plane_id": plane_index, "line_id": line.id, "line_name": line.name, "plane_name": plane.name,
                    "metadata_id": event.metadata_id, "duration_ps": event.duration_ps,
                    "start_ps": (line.timestamp_ns - origin) * 1000 + event.offset_ps,
                    "name": plane.event_metadata[event.metadata_id].name
                    if event.metadata_id in plane.event_metadata else None,
                }
                values = {}
                if event.metadata_id in plane.event_metadata:
                    for stat in plane.event_metadata[event.metadata_id].stats:
                        values[names.get(stat.metadata_id)] = _value(stat, names)
                for stat in event.stats:
                    values[names.get(stat.metadata_id)] = _value(stat, names)
                for column in EVENT_STAT_COLUMNS:
                    row[column] = values.get(column)
                rows.append(row)
    return rows
