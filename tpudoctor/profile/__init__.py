"""Profile captures (XSpace ``.xplane.pb``): take them, analyse them, and load them as pandas DataFrames.

    import tpudoctor.profile
    report = tpudoctor.profile.analyze("gs://bucket/logdir")        # ProfileReport: verdict, findings...
    report.verdict, report.findings, report.to_dict()                # to_dict(): the JSON document
    result = tpudoctor.profile.analyze_host("h0.xplane.pb")          # the per-host map: a small HostResult
    report = tpudoctor.profile.combine([result, ...])                # ... and the combine step

    capture = tpudoctor.profile.load("gs://bucket/logdir")           # newest run, all hosts
    host = next(iter(capture.hosts.values()))
    host.planes; host.lines; host.event_metadata
    ops = host.events_on("/device:TPU:0", "XLA Ops")                  # one row per event (a slice, no copy)
    ops.groupby("hlo_category", observed=True)["duration_ps"].sum()

    with tpudoctor.profile.trace("/tmp/logdir"):                       # TensorFlow or JAX
        train_step()

How a capture is read (the fastest correct way measured by ``benchmarks/bench_profile_load.py``):
protobuf's C parser (upb) reads the file against tpudoctor's own copy of the published schema
(``xplane.proto``, built in Python at import: no generated code, no TensorFlow), with
``XPlane.lines`` and ``XLine.events`` declared as ``repeated bytes``. upb thus splits every line
into its events' bytes without making a message object per event; the events are joined into
buffers of about 128 k and their fields and stats decoded for all of them at once with numpy
(``tpudoctor.captures.wire``); a large local file is read line by line. On the x50 benchmark
capture (40 MB, 1.3 M events) the whole analysis takes about 1.1 s and 0.24 GB, against 15 s and
1.2 GB for xprof's own overview_page conversion; a 1 GB capture (35 M events) about 26 s and
2.2-2.5 GB. Metadata and stat-name tables are resolved once per plane, stat ``ref_value``
indirection included; static op facts on the event metadata (``hlo_category``, ``flops``...) are
joined onto each event unless the event carries its own value.

Units are in the names: ``*_ps`` picoseconds, ``*_ns`` nanoseconds. ``events.start_ps`` counts
from ``time_origin_ns`` (absolute picoseconds since the epoch overflow int64).

Tables of a ``HostProfile`` (``capture.hosts[hostname]``):

* ``planes``: plane_id (position in the file; unique), xplane_id (the file's id, often 0), plane_name,
  device_kind ("TPU v6 Lite", "GPU (AMD)", "CPU"...), is_device, n_lines, n_events, n_event_metadata.
* ``lines``: plane_id, line_id, line_name, display_name, timestamp_ns, duration_ps, n_events.
* ``events`` (one row per event, in file order: plane by plane, line by line, as many of each line as
  ``lines.n_events`` counts): metadata_id (int16 where every id fits), name (categorical), start_ps, duration_ps,
  then the stats. Each event's line's own columns (``LINE_COLUMNS``: plane_id, line_id, plane_name,
  line_name) are kept once per line: ``host.line_values("plane_name", rows)`` reads them at the events
  (``line_of(rows)``: their rows of ``lines``), ``host.with_line_columns(frame)`` joins them onto some events. The stats:
  always ``CORE_STAT_COLUMNS`` (step_num, group_id, program_id, hlo_category, tf_op, long_name,
  flops, bytes_accessed; all-missing when the capture lacks them; with ``LoadOptions(stats=...)`` only
  those asked for), and each other stat of ``EVENT_STAT_COLUMNS`` (run_id, replica_id, hlo_op, hlo_module,
  source, device_offset_ps, device_duration_ps, correlation_id, _pt/_p/_ct/_c flow ids, ...) only
  where the capture has it. Integers are nullable ``Int64``/``UInt64`` (64-bit ids stay exact), but for those
  that number or label things (``LABEL_STATS``: step_num, group_id, run_id, flow types...), kept in the narrowest
  nullable type that holds their values (``Int8``... ``Int64``); text is categorical; a value is missing where neither the event nor its metadata has the stat.
  ``load(..., options=LoadOptions(extra_stats={"name": "int"}))`` adds columns. The per-host analysis reads XLA's op
  facts (``METADATA_STATS``: flops, model_flops, bytes_accessed) from ``event_metadata`` instead
  (``HostProfile.stat_at``) when no event carries its own, and the device ops' own stats (``DEVICE_OP_STATS``:
  program_id, device_offset_ps, device_duration_ps, hlo_category, hlo_op, tf_op, source) from
  ``HostProfile.sparse_stats``, kept only at the events that carry them (``stat_at``, ``rows_with``).
* ``event_metadata``: plane_id, metadata_id, name, display_name, one column per metadata stat
  (bytes values over 4 KiB, such as HloProtos, are replaced by "<N bytes>").
* ``plane_stats``: {plane_id: {stat name: value}} (device peak FLOPS/bandwidth, profile start/stop).

Aggregated events (``num_occurrences`` instead of ``offset_ps``) start at their line's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpudoctor.captures.xspace import (
        CORE_STAT_COLUMNS,
        EVENT_STAT_COLUMNS,
        HostProfile,
        LoadOptions,
    )
    from tpudoctor.profile.capture import ProfileCapture, load
    from tpudoctor.profile.host_result import HostResult
    from tpudoctor.profile.pipeline import analyze, analyze_host, combine
    from tpudoctor.profile.report import ProfileReport
    from tpudoctor.profile.tracing import trace

__all__ = ["CORE_STAT_COLUMNS", "EVENT_STAT_COLUMNS", "HostProfile", "HostResult", "LoadOptions", "ProfileCapture",
           "ProfileReport", "analyze", "analyze_host", "combine", "load", "trace"]

_EXPORTS = {
    "analyze": "tpudoctor.profile.pipeline",
    "analyze_host": "tpudoctor.profile.pipeline",
    "combine": "tpudoctor.profile.pipeline",
    "ProfileReport": "tpudoctor.profile.report",
    "HostResult": "tpudoctor.profile.host_result",
    "load": "tpudoctor.profile.capture",
    "ProfileCapture": "tpudoctor.profile.capture",
    "HostProfile": "tpudoctor.captures.xspace",
    "EVENT_STAT_COLUMNS": "tpudoctor.captures.xspace",
    "CORE_STAT_COLUMNS": "tpudoctor.captures.xspace",
    "LoadOptions": "tpudoctor.captures.xspace",
    "trace": "tpudoctor.profile.tracing",
}


def __getattr__(name: str) -> Any:  # numpy/pandas load only when a capture is used
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tpudoctor.profile' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
