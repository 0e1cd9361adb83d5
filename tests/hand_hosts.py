"""A ``HostProfile`` made by hand from one events frame that carries its lines' columns (``LINE_COLUMNS``), stored
as the decoder stores a capture: line after line, the lines' own columns kept once per line."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace import LINE_COLUMNS, HostProfile


def line_sorted(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows line after line (by plane, then line id; stable), numbered again from 0."""
    return frame.sort_values(["plane_id", "line_id"], kind="stable").reset_index(drop=True)


def host_of(frame: pd.DataFrame) -> HostProfile:
    """The host whose events are ``frame``'s rows (which must come line after line: ``line_sorted``); plane and
    line names from its ``plane_name``/``line_name`` where it has them."""
    plane = frame["plane_id"].to_numpy(np.int64)
    line = frame["line_id"].to_numpy(np.int64)
    if np.any((plane[1:] < plane[:-1]) | ((plane[1:] == plane[:-1]) & (line[1:] < line[:-1]))):
        raise ValueError("the rows do not come line after line: line_sorted(frame) first")
    first = np.flatnonzero(np.r_[True, (plane[1:] != plane[:-1]) | (line[1:] != line[:-1])]) if len(frame) else []
    counts = np.diff(np.r_[first, len(frame)]).astype(np.int64)
    line_names = frame["line_name"].astype(str).to_numpy()[first] if "line_name" in frame else ["line"] * len(first)
    lines = pd.DataFrame({"plane_id": plane[first], "line_id": line[first], "line_name": list(line_names),
                          "display_name": None, "timestamp_ns": 0, "duration_ps": 0, "n_events": counts})
    n_planes = int(plane.max()) + 1 if len(frame) else 0
    names = {int(p): (str(n) if "plane_name" in frame else f"/plane:{int(p)}")
             for p, n in zip(plane[first], frame["plane_name"].to_numpy()[first] if "plane_name" in frame
                             else plane[first], strict=True)}
    planes = pd.DataFrame({
        "plane_id": np.arange(n_planes), "xplane_id": 0,
        "plane_name": [names.get(p, f"/plane:{p}") for p in range(n_planes)], "device_kind": None,
        "is_device": [names.get(p, "").startswith("/device:") for p in range(n_planes)],
        "n_lines": [int((lines["plane_id"] == p).sum()) for p in range(n_planes)],
        "n_events": [int(counts[lines["plane_id"].to_numpy() == p].sum()) for p in range(n_planes)],
        "n_event_metadata": 0})
    events = frame.drop(columns=[c for c in LINE_COLUMNS if c in frame.columns])
    metadata = pd.DataFrame({"plane_id": np.zeros(0, np.int64), "metadata_id": np.zeros(0, np.int64), "name": [],
                             "display_name": []})
    return HostProfile(hostname="h", source="made by hand", planes=planes, lines=lines, events=events,
                       event_metadata=metadata, plane_stats={}, time_origin_ns=0)
