"""What a capture holds: hosts, planes, lines, event counts, time spans, device kind (data, no text)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the data classes here travel without the loader (renderers import them)
    from tpudoctor.captures.xspace import HostProfile
    from tpudoctor.profile.capture import ProfileCapture


@dataclasses.dataclass
class LineSummary:
    line_id: int
    line_name: str
    n_events: int
    span_ps: int  # first event start to last event end on this line


@dataclasses.dataclass
class PlaneSummary:
    plane_id: int
    plane_name: str
    device_kind: str | None
    is_device: bool
    n_lines: int
    n_events: int
    first_start_ps: int | None
    last_end_ps: int | None
    span_ps: int
    lines: list[LineSummary]


@dataclasses.dataclass
class HostSummary:
    hostname: str
    source: str
    file_size_bytes: int
    device_kind: str
    n_device_planes: int
    n_planes: int
    n_lines: int
    n_events: int
    span_ps: int  # first event start to last event end over all planes
    profile_duration_ns: int | None  # from the capture's Task Environment, when present
    planes: list[PlaneSummary]


@dataclasses.dataclass
class CaptureSummary:
    source: str
    run: str | None
    runs_available: list[str]
    time_origin_ns: int
    n_hosts: int
    n_events: int
    device_kinds: list[str]
    hosts: list[HostSummary]
    failed_hosts: dict[str, str]
    notes: list[str]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CaptureSummary:
        """The inverse of ``to_dict`` (a renderer reads the summary back from the prepared document)."""
        hosts = [HostSummary(**{**host, "planes": [PlaneSummary(**{**plane, "lines": [
            LineSummary(**line) for line in plane["lines"]]}) for plane in host["planes"]]})
            for host in data["hosts"]]
        return cls(**{**data, "hosts": hosts, "runs_available": list(data["runs_available"]),
                      "device_kinds": list(data["device_kinds"]), "failed_hosts": dict(data["failed_hosts"]),
                      "notes": list(data["notes"])})


def shifted(host: HostSummary, offset_ps: int) -> HostSummary:
    """The summary with its plane times moved by ``offset_ps`` (onto another time origin)."""
    if not offset_ps:
        return host
    planes = [dataclasses.replace(
        p, first_start_ps=None if p.first_start_ps is None else p.first_start_ps + offset_ps,
        last_end_ps=None if p.last_end_ps is None else p.last_end_ps + offset_ps) for p in host.planes]
    return dataclasses.replace(host, planes=planes)


def summarize(capture: ProfileCapture) -> CaptureSummary:
    hosts = [summarize_host(host) for host in capture.hosts.values()]
    kinds = sorted({host.device_kind for host in hosts})
    return CaptureSummary(
        source=capture.source, run=capture.run, runs_available=list(capture.runs_available),
        time_origin_ns=capture.time_origin_ns, n_hosts=len(hosts), n_events=sum(h.n_events for h in hosts),
        device_kinds=kinds, hosts=hosts, failed_hosts=dict(capture.failed_hosts), notes=list(capture.notes),
    )


def _line_spans(host: HostProfile):
    """First start and last end of each line that has events (``plane_id``, ``line_id``, ``start``,
    ``end``). Events are stored line after line, so each line is one reduction over its slice: no
    per-event frame and no group-by over millions of rows."""
    import numpy as np
    import pandas as pd

    lines = host.lines
    counts = np.diff(host.line_first_rows)
    filled = counts > 0
    starts = host.events["start_ps"].to_numpy(np.int64)
    if not filled.any():
        return pd.DataFrame({"plane_id": np.zeros(0, np.int64), "line_id": np.zeros(0, np.int64),
                             "start": np.zeros(0, np.int64), "end": np.zeros(0, np.int64)})
    first_row = host.line_first_rows[:-1][filled]
    line_start = np.minimum.reduceat(starts, first_row)
    # the last end of each line, a few lines at a time (no end column as long as the capture)
    durations = host.events["duration_ps"].to_numpy()
    last_row = first_row + counts[filled]
    line_end = np.empty(len(first_row), np.int64)
    low = 0
    while low < len(first_row):
        high = max(int(np.searchsorted(first_row, first_row[low] + (1 << 20), side="right")), low + 1)
        rows = slice(int(first_row[low]), int(last_row[high - 1]))
        ends = starts[rows] + np.asarray(durations[rows], np.int64)
        line_end[low:high] = np.maximum.reduceat(ends, first_row[low:high] - first_row[low])
        low = high
    return pd.DataFrame({"plane_id": lines["plane_id"].to_numpy()[filled], "line_id": lines["line_id"].to_numpy()[filled],
                         "start": line_start, "end": line_end})


def summarize_host(host: HostProfile) -> HostSummary:
    import pandas as pd

    by_line = _line_spans(host)
    by_plane = by_line.groupby("plane_id", sort=False).agg(start=("start", "min"), end=("end", "max"))
    line_span = {(p, line): int(e - b) for p, line, b, e in zip(by_line["plane_id"], by_line["line_id"],
                                                                 by_line["start"], by_line["end"], strict=True)}
    plane_spans = {int(p): (int(b), int(e)) for p, b, e in zip(by_plane.index, by_plane["start"], by_plane["end"],
                                                                 strict=True)}
    planes: list[PlaneSummary] = []
    lines_by_plane = {plane_id: frame for plane_id, frame in host.lines.groupby("plane_id", sort=False)}
    for row in host.planes.itertuples(index=False):
        plane_lines = lines_by_plane.get(row.plane_id)
        lines = [] if plane_lines is None else [
            LineSummary(line_id=int(line.line_id), line_name=str(line.line_name), n_events=int(line.n_events),
                        span_ps=line_span.get((row.plane_id, line.line_id), 0))
            for line in plane_lines.itertuples(index=False)
        ]
        has = int(row.plane_id) in plane_spans
        first, last = plane_spans[int(row.plane_id)] if has else (None, None)
        planes.append(PlaneSummary(
            plane_id=int(row.plane_id), plane_name=str(row.plane_name),
            device_kind=None if pd.isna(row.device_kind) else str(row.device_kind),
            is_device=bool(row.is_device), n_lines=int(row.n_lines), n_events=int(row.n_events),
            first_start_ps=first, last_end_ps=last, span_ps=(last - first) if has else 0, lines=lines,
        ))
    device = host.planes[host.planes["is_device"]]
    device_kinds = [kind for kind in device["device_kind"].dropna().unique()]
    device_kind = ", ".join(device_kinds) if device_kinds else "CPU only (no device planes)"
    environment_planes = {int(p) for p, name in zip(host.planes["plane_id"], host.planes["plane_name"], strict=True)
                          if name == "Task Environment"}
    env = next((stats for plane_id, stats in host.plane_stats.items() if plane_id in environment_planes), {})
    start_ns, stop_ns = env.get("profile_start_time"), env.get("profile_stop_time")
    duration_ns = int(stop_ns) - int(start_ns) if isinstance(start_ns, int) and isinstance(stop_ns, int) else None
    n_events = len(host.events)
    span = int(by_line["end"].max() - by_line["start"].min()) if n_events and len(by_line) else 0
    return HostSummary(
        hostname=host.hostname, source=host.source, file_size_bytes=host.file_size_bytes, device_kind=device_kind,
        n_device_planes=int(len(device)), n_planes=int(len(host.planes)), n_lines=int(len(host.lines)),
        n_events=int(n_events), span_ps=span, profile_duration_ns=duration_ns, planes=planes,
    )
