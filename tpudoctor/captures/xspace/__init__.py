"""One host's XSpace (``.xplane.pb``) as columnar pandas tables: a ``HostProfile``.

    from tpudoctor.captures.xspace import LoadOptions, decode_host_file
    host = decode_host_file(path, hostname="h", source=path, options=LoadOptions.for_analysis())
    memory = read_plane_events(path, ["/host:CPU"], {"bytes_allocated": "int", "tf_op": "str"},
                               event_names=["MemoryAllocation", "MemoryDeallocation"])

``read_plane_events`` (``LoadOptions.planes``, ``LoadOptions.events``) is the entry for any reader of a
capture's events besides ``profile``: the named planes only, the named events only, the stats asked for as
columns; ``LoadOptions.lines`` keeps every event of the named lines (memory's reader: ``XLA Modules``).

Each module one job:

* ``columns``: which stats become event columns, and ``LoadOptions`` (the loader's settings).
* ``decoder``: the wire level: plane and line headers, metadata, every event's fields and stats.
* ``jit_wire``, ``compiled``: the same decoding as numba-compiled kernels, their machine code cached on disk
  and loaded with llvmlite (``LoadOptions.decoder``; the numpy decoder where numba is missing).
* ``selection``: the planes, lines and events a load asks for by name, chosen before they are decoded.
* ``planes_on_disk``: a large local file walked plane by plane instead of parsed whole, opened once.
* ``tables``: the decoded planes as the ``HostProfile`` tables (columns, categoricals, frames).
* ``host_profile``: ``HostProfile`` itself; ``lookup``: (plane, id) -> row lookups.
* ``reader``: bytes or a file in, ``HostProfile`` or an ``InputError`` out.

Names are imported on first use, so that ``columns`` (plain Python) loads without numpy or pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpudoctor.captures.xspace.columns import (
        ANALYSIS_STAT_COLUMNS,
        CORE_STAT_COLUMNS,
        DEVICE_OP_STATS,
        DEVICE_PLANE_PREFIXES,
        EVENT_STAT_COLUMNS,
        LABEL_STATS,
        LINE_COLUMNS,
        METADATA_STATS,
        STAT_KINDS,
        LoadOptions,
    )
    from tpudoctor.captures.xspace.host_profile import HostProfile
    from tpudoctor.captures.xspace.reader import decode_host, decode_host_file, read_plane_events

__all__ = ["ANALYSIS_STAT_COLUMNS", "CORE_STAT_COLUMNS", "DEVICE_OP_STATS", "DEVICE_PLANE_PREFIXES", "EVENT_STAT_COLUMNS", "LABEL_STATS",
           "LINE_COLUMNS", "METADATA_STATS", "STAT_KINDS", "HostProfile", "LoadOptions", "decode_host", "decode_host_file", "read_plane_events"]

_EXPORTS = {
    **dict.fromkeys(("ANALYSIS_STAT_COLUMNS", "CORE_STAT_COLUMNS", "DEVICE_OP_STATS", "DEVICE_PLANE_PREFIXES", "EVENT_STAT_COLUMNS",
                     "LABEL_STATS", "LINE_COLUMNS", "METADATA_STATS", "STAT_KINDS", "LoadOptions"),
                    "tpudoctor.captures.xspace.columns"),
    "HostProfile": "tpudoctor.captures.xspace.host_profile",
    "decode_host": "tpudoctor.captures.xspace.reader",
    "decode_host_file": "tpudoctor.captures.xspace.reader",
    "read_plane_events": "tpudoctor.captures.xspace.reader",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tpudoctor.captures.xspace' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
