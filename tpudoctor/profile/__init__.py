"""Profile captures (XSpace ``.xplane.pb``): take them, and load them as pandas DataFrames.

    import tpudoctor.profile
    capture = tpudoctor.profile.load("gs://bucket/logdir")           # newest run, all hosts
    host = next(iter(capture.hosts.values()))
    host.planes; host.lines; host.event_metadata
    ops = host.events_on("/device:TPU:0", "XLA Ops")                  # one row per event
    ops.groupby("hlo_category", observed=True)["duration_ps"].sum()

    with tpudoctor.profile.trace("/tmp/logdir"):                       # TensorFlow or JAX
        train_step()

How a capture is read (the fastest correct way measured by ``benchmarks/bench_profile_load.py``):
protobuf's C parser (upb) reads the file against tpudoctor's own copy of the published schema
(``xplane.proto``, built in Python at import: no generated code, no TensorFlow), with
``XLine.events`` declared as ``repeated bytes``. upb thus splits every line into its events'
bytes without making a message object per event; the events of all lines are joined into one
buffer and their fields and stats decoded for all events at once with numpy
(``tpudoctor.profile.wire``). Iterating upb messages in Python was 10x slower on the x50
benchmark capture. Metadata and stat-name tables are resolved once per plane, stat
``ref_value`` indirection included; static op facts on the event metadata (``hlo_category``,
``flops``...) are joined onto each event unless the event carries its own value.

Units are in the names: ``*_ps`` picoseconds, ``*_ns`` nanoseconds. ``events.start_ps`` counts
from ``time_origin_ns`` (absolute picoseconds since the epoch overflow int64).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpudoctor.profile.capture import ProfileCapture, load
    from tpudoctor.profile.tracing import trace
    from tpudoctor.profile.xspace import EVENT_STAT_COLUMNS, HostProfile

__all__ = ["EVENT_STAT_COLUMNS", "HostProfile", "ProfileCapture", "load", "trace"]

_EXPORTS = {
    "load": "tpudoctor.profile.capture",
    "ProfileCapture": "tpudoctor.profile.capture",
    "HostProfile": "tpudoctor.profile.xspace",
    "EVENT_STAT_COLUMNS": "tpudoctor.profile.xspace",
    "trace": "tpudoctor.profile.tracing",
}


def __getattr__(name: str) -> Any:  # numpy/pandas load only when a capture is used
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tpudoctor.profile' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
