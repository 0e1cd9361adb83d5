"""Rows of (plane, id) pairs in per-plane id tables: how stat and event metadata ids are resolved."""

from __future__ import annotations

import numpy as np


class RowLookup:
    """Row of each (plane, id) in per-plane sorted id tables laid end to end (-1 when absent).

    Metadata ids are mostly small counters, so the rows of those planes fit a dense (plane x id)
    table read with one gather; planes with other ids (``/host:metadata`` has hashes) are
    binary-searched (``lookup_rows``)."""

    DENSE_MAX_CELLS = 1 << 24  # 64 MB of int32 at most
    CHUNK = 1 << 20  # items per gather: bounds the int64 index temporaries on big captures

    def __init__(self, ids_per_plane: list[np.ndarray], offsets: list[int]):
        self.ids_per_plane, self.offsets = ids_per_plane, offsets
        n_planes = len(ids_per_plane)
        self.dense = np.asarray([not len(ids) or (ids[0] >= 0 and ids[-1] < self.DENSE_MAX_CELLS // max(n_planes, 1))
                                 for ids in ids_per_plane], dtype=bool)
        self.width = max([int(ids[-1]) + 1 for ids, dense in zip(ids_per_plane, self.dense, strict=True)
                          if dense and len(ids)], default=1)
        table = np.full((n_planes, self.width), -1, dtype=np.int32)
        for plane_index in np.flatnonzero(self.dense):
            ids, offset = ids_per_plane[plane_index], offsets[plane_index]
            table[plane_index, ids] = np.arange(offset, offset + len(ids), dtype=np.int32)
        self.table = np.append(table.ravel(), np.int32(-1))  # the last cell answers ids out of range

    def lookup(self, plane_of_item: np.ndarray, ids_of_item: np.ndarray) -> np.ndarray:
        if len(plane_of_item) > 1 and not np.any(plane_of_item[1:] < plane_of_item[:-1]):
            return self._lookup_grouped(plane_of_item, ids_of_item)
        rows = np.empty(len(ids_of_item), dtype=np.int32)
        missing = len(self.table) - 1
        for low in range(0, len(ids_of_item), self.CHUNK):
            ids = ids_of_item[low:low + self.CHUNK]
            cell = plane_of_item[low:low + self.CHUNK].astype(np.int64)
            cell *= self.width
            cell += ids
            cell[(ids < 0) | (ids >= self.width)] = missing
            rows[low:low + self.CHUNK] = self.table[cell]
        if not self.dense.all():
            searched = np.flatnonzero(~self.dense[plane_of_item])
            if len(searched):
                rows[searched] = lookup_rows(plane_of_item[searched], ids_of_item[searched], self.ids_per_plane,
                                             self.offsets)
        return rows


    def _lookup_grouped(self, plane_of_item: np.ndarray, ids_of_item: np.ndarray) -> np.ndarray:
        """``lookup`` of items grouped by plane (events are: a plane's lines are adjacent): one gather
        per plane from that plane's row of the table, with no per-item cell arithmetic."""
        rows = np.full(len(ids_of_item), -1, dtype=np.int32)
        n_planes = len(self.ids_per_plane)
        bounds = plane_bounds(plane_of_item, n_planes)
        for plane_index in range(n_planes):
            low, high = bounds[plane_index], bounds[plane_index + 1]
            if low == high:
                continue
            ids = ids_of_item[low:high]
            if not self.dense[plane_index]:
                rows[low:high] = lookup_rows(np.zeros(high - low, dtype=np.int8), ids,
                                             [self.ids_per_plane[plane_index]], [self.offsets[plane_index]])
                continue
            start = plane_index * self.width
            plane_rows = np.append(self.table[start:start + self.width], np.int32(-1))  # ids past it: -1
            np.take(plane_rows, ids, mode="clip", out=rows[low:high])
            if ids.min() < 0:  # clipped to id 0, which they are not
                rows[low:high][ids < 0] = -1
        return rows


def lookup_rows(plane_of_item: np.ndarray, ids_of_item: np.ndarray, ids_per_plane: list[np.ndarray],
                offsets: list[int]) -> np.ndarray:
    """Row (int32) of each (plane, id) in per-plane sorted id tables laid end to end; -1 when absent.

    Items are grouped by plane once (events already are: a plane's lines are adjacent), so each
    plane's ids are looked up in one slice instead of a scan of all items per plane."""
    rows = np.full(len(ids_of_item), -1, dtype=np.int32)
    if not len(ids_of_item):
        return rows
    order = None
    if np.any(plane_of_item[1:] < plane_of_item[:-1]):
        order = np.argsort(plane_of_item, kind="stable")
        plane_of_item = plane_of_item[order]
    bounds = plane_bounds(plane_of_item, len(ids_per_plane))
    for plane_index, ids in enumerate(ids_per_plane):
        low, high = int(bounds[plane_index]), int(bounds[plane_index + 1])
        if not len(ids) or low == high:
            continue
        selected = slice(low, high) if order is None else order[low:high]
        wanted = ids_of_item[selected]
        position = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        found = ids[position] == wanted
        position += offsets[plane_index]
        position[~found] = -1
        rows[selected] = position
    return rows


def plane_bounds(sorted_planes: np.ndarray, n_planes: int) -> list[int]:
    """Where each plane's items begin in plane-sorted items, and where the last plane's end (items of a plane
    past ``n_planes``, one with events and no metadata, are in none): searched with scalars of the planes' own
    (narrow) type, since an array of another type would convert every item to it."""
    if n_planes > np.iinfo(sorted_planes.dtype).max:
        return np.searchsorted(sorted_planes, np.arange(n_planes + 1)).tolist()
    as_plane = sorted_planes.dtype.type
    return [int(np.searchsorted(sorted_planes, as_plane(plane))) for plane in range(n_planes + 1)]


def gather(table: np.ndarray, rows: np.ndarray, missing: int = -1) -> np.ndarray:
    """``table[rows]`` in the table's dtype, ``missing`` where a row is -1 (the only negative row): the
    table gets ``missing`` as its last entry, which row -1 indexes, so no temporary as long as ``rows``."""
    extended = np.append(table, np.asarray(missing, dtype=table.dtype))
    return extended[rows]


def run_of_rows(run_ends: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The run of each of ``rows`` (int64) in rows stored run after run, run ``i`` ending (exclusive) at
    ``run_ends[i]`` (as a capture's events are stored line after line): for ascending rows a cut per run
    they cover, else a search per row."""
    rows = np.asarray(rows)
    if len(rows) < 2 or np.any(rows[1:] < rows[:-1]):
        return np.searchsorted(run_ends, rows, side="right")
    first, last = np.searchsorted(run_ends, [rows[0], rows[-1]], side="right")
    cuts = np.searchsorted(rows, run_ends[first:last], side="left")
    return np.repeat(np.arange(first, last + 1), np.diff(np.concatenate(([0], cuts, [len(rows)]))))


def code_dtype(n_values: int) -> type:
    """The narrowest signed integer type of ``n_values`` codes (0 to n - 1, and -1): the one pandas gives
    the codes of that many categories, so that from_codes keeps the array."""
    for dtype in (np.int8, np.int16, np.int32):  # strictly below the maximum, as pandas' coerce_indexer_dtype
        if n_values < np.iinfo(dtype).max:
            return dtype
    return np.int64
