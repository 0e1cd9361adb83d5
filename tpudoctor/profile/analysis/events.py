"""Selecting events: the column helpers every analysis shares (planes, lines, names, rows).

Everything here works on whole columns (numpy/pandas); nothing loops over events in Python.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.grouping import CHUNK_ROWS, rows_with_codes

TPU_PLANE = re.compile(r"^/device:TPU:(\d+)$")


GPU_PLANE_PREFIX = "/device:GPU:"


HOST_PLANE = "/host:CPU"


TF_OP_NAME = r"^[A-Za-z0-9_./\-]+:[A-Z_][A-Za-z0-9_]*$"


# Lines on device planes that xprof derives from the op line (never count them as ops).
DERIVED_DEVICE_LINES = {
    "Steps", "XLA Modules", "Framework Ops", "Framework Name Scope", "TensorFlow Ops",
    "TensorFlow Name Scope", "Source code", "Host Offload Ops", "XLA TraceMe", "Overlay",
    "Async XLA Ops", "_counters_", "Launch Stats", "Sparse Core Steps", "Sparse Core Modules",
    "Tensor Core Sync Flag", "Sparse Core Syncs",
}


def column(frame: pd.DataFrame, name: str) -> pd.Series:
    """``frame[name]``, or an all-missing column when the capture has no such stat."""
    if name in frame.columns:
        return frame[name]
    return pd.Series(pd.NA, index=frame.index, dtype="object")


def mask(series: pd.Series) -> np.ndarray:
    """A writable numpy bool mask from a (possibly nullable) boolean Series."""
    return np.array(series.fillna(False).to_numpy(dtype=bool), dtype=bool)


def _category_hits(categories: pd.Index, pattern: str) -> np.ndarray:
    """Which categories match ``pattern`` (``re.search``, as ``str.contains`` tests each), with a last
    ``False`` that code -1 (missing) indexes: one regex call per distinct text, no string array made."""
    search = re.compile(pattern).search
    hit = np.fromiter((search(str(c)) is not None for c in categories), dtype=bool, count=len(categories))
    return np.append(hit, False)


def name_matches(frame: pd.DataFrame, pattern: str, col: str = "name") -> np.ndarray:
    values = column(frame, col)
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Match each distinct name once, then map back (names repeat thousands of times).
        hits = _category_hits(values.cat.categories, pattern)
        return rows_with_codes(values.array.codes, hits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return mask(values.astype("string").str.contains(pattern, regex=True))


def text_equals(series: pd.Series, value: str) -> np.ndarray:
    """``series.astype(str) == value`` as a bool array, comparing each distinct category once
    instead of turning millions of rows into Python strings."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype(str) == value)
    hit = np.append(np.asarray(series.cat.categories.astype(str) == value, dtype=bool), False)
    return rows_with_codes(series.array.codes, hit)  # code -1 (missing: stays missing as text) takes the appended False


def text_in(series: pd.Series, values) -> np.ndarray:
    """Rows whose (non-missing) value is one of ``values``, decided once per distinct category."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return mask(series.astype("string").isin(values))
    hit = np.append(np.asarray(series.cat.categories.astype(str).isin(list(values)), dtype=bool), False)
    return rows_with_codes(series.array.codes, hit)


def host_rows(host, pattern: str | None = None) -> np.ndarray:
    """Positions of the ``/host:CPU`` events (whose name matches ``pattern``) in ``host.events``."""
    on_host = plane_lines(host, lambda name: name == HOST_PLANE)
    if pattern is None:
        return np.flatnonzero(host.on_lines(on_host))
    rows = np.flatnonzero(name_matches(host.events, pattern))  # the rarer test first, then the lines of those rows
    return rows[on_host[host.line_of(rows)]]


def plane_lines(host, plane_hit) -> np.ndarray:
    """A bool per row of ``host.lines``: whether its plane's name passes ``plane_hit``."""
    return _lines_whose(host, "plane_name", plane_hit)


def named_lines(host, line_hit) -> np.ndarray:
    """A bool per row of ``host.lines``: whether its name passes ``line_hit``."""
    return _lines_whose(host, "line_name", line_hit)


def _lines_whose(host, name_column: str, hit) -> np.ndarray:
    """A bool per row of ``host.lines``: whether its ``name_column`` passes ``hit``, tried once per distinct name."""
    codes, categories = host.line_codes(name_column)
    passes = np.fromiter((bool(hit(str(name))) for name in categories), bool, len(categories))
    return np.append(passes, False)[codes]  # code -1 (no name) takes the appended False


def module_rows(host, core: str | None = None) -> np.ndarray:
    """Rows of the ``XLA Modules`` line events of the plane named ``core`` (of every plane: None)."""
    return line_rows(host, "XLA Modules", None if core is None else (lambda plane: plane == core))


def line_rows(host, line_name: str, plane_hit=None) -> np.ndarray:
    """Rows of the events of the lines named ``line_name`` (on the planes whose name passes ``plane_hit``)."""
    first, counts = whole_lines(host, line_name, plane_hit)
    if not len(first):
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(low, low + count) for low, count in zip(first.tolist(), counts.tolist(),
                                                                                strict=True)])


def whole_lines(host, line_name: str, plane_hit=None) -> tuple[np.ndarray, np.ndarray]:
    """(first row, row count) of the lines named ``line_name`` (on the planes whose name passes ``plane_hit``) that
    have events, in the events' order: the events are stored line after line, so a line's events are one run of
    rows."""
    chosen = named_lines(host, lambda name: name == line_name)
    if plane_hit is not None:
        chosen &= plane_lines(host, plane_hit)
    first_rows = host.line_first_rows
    counts = np.diff(first_rows)
    chosen = np.flatnonzero(chosen & (counts > 0))
    return first_rows[chosen], counts[chosen]


def take(frame: pd.DataFrame, name: str, rows: np.ndarray, dtype=np.int64) -> np.ndarray:
    """``frame[name]`` at ``rows`` as a numpy array of ``dtype`` (whatever the column's own dtype)."""
    series = frame[name]
    if isinstance(series.dtype, np.dtype):  # a numpy column: one gather, no intermediate array
        return series.to_numpy()[rows].astype(dtype, copy=False)
    return np.asarray(series.array.take(rows).to_numpy(dtype), dtype=dtype)


def rows_frame(frame: pd.DataFrame, rows: np.ndarray, columns) -> pd.DataFrame:
    """The given columns of ``frame`` at ``rows`` (a few columns of some rows, never every stat)."""
    return pd.DataFrame({c: frame[c].array.take(rows) for c in columns if c in frame.columns})


def end_ps(frame: pd.DataFrame) -> np.ndarray:
    return frame["start_ps"].to_numpy(np.int64) + frame["duration_ps"].to_numpy(np.int64)


def device_kind(host) -> str:
    """"tpu", "gpu" or "cpu" (CPU: no device plane; XLA CPU thunks run on host threads)."""
    names = host.planes["plane_name"].astype(str)
    if names.str.match(TPU_PLANE.pattern).any():
        return "tpu"
    if names.str.startswith(GPU_PLANE_PREFIX).any():
        return "gpu"
    return "cpu"


def device_cores(host) -> list[str]:
    """Device plane names, each once (a file of joined XSpaces repeats a device's plane per copy)."""
    names = list(dict.fromkeys(str(n) for n in host.planes["plane_name"]))
    kind = device_kind(host)
    if kind == "tpu":
        return sorted((n for n in names if TPU_PLANE.match(n)), key=lambda n: int(TPU_PLANE.match(n).group(1)))
    if kind == "gpu":
        return sorted(n for n in names if n.startswith(GPU_PLANE_PREFIX))
    return ["cpu"]


def capture_window_ps(host) -> tuple[int, int]:
    """First start and last end of any timed event (the profiled window as the file shows it)."""
    ev = host.events
    durations = ev["duration_ps"].to_numpy()
    starts = ev["start_ps"].to_numpy()
    first, last = None, None
    for low in range(0, len(durations), CHUNK_ROWS):  # bounded temporaries on big captures
        duration = np.asarray(durations[low:low + CHUNK_ROWS], np.int64)
        timed = duration > 0
        if not timed.any():
            continue
        start = np.asarray(starts[low:low + CHUNK_ROWS], np.int64)
        limits = np.iinfo(np.int64)
        chunk_first = int(np.min(start, where=timed, initial=limits.max))
        chunk_last = int(np.max(start + duration, where=timed, initial=limits.min))
        first = chunk_first if first is None else min(first, chunk_first)
        last = chunk_last if last is None else max(last, chunk_last)
    return (0, 0) if first is None else (first, last)
