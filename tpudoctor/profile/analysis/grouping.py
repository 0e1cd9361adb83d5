"""Rows as integer codes and groups: a text column coded once per distinct value, group counts
and exact sums by ``bincount`` (what a pandas group-by gives, without hashing per row)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace.columns import LINE_COLUMNS
from tpudoctor.captures.xspace.lookup import code_dtype


class Coded:
    """A text column at some rows as integer codes (-1: missing) into ``labels`` (str): the rows are
    worked on as numbers and each distinct text once, never one Python string per row."""

    def __init__(self, codes: np.ndarray, labels: np.ndarray):
        self.codes = codes
        self.labels = labels  # object array of str, one per code

    @classmethod
    def of(cls, frame: pd.DataFrame, name: str, rows: np.ndarray | None = None) -> Coded:
        """``frame[name]`` (at ``rows``) coded; an all-missing column where the frame has none."""
        n = len(frame) if rows is None else len(rows)
        if name not in frame.columns:  # a read-only view: no array as long as the rows
            return cls(np.broadcast_to(np.int8(-1), (n,)), np.zeros(0, object))
        values = frame[name]
        if isinstance(values.dtype, pd.CategoricalDtype):
            codes = values.array.codes
            labels = np.array([str(c) for c in values.cat.categories], dtype=object)
            return cls(codes if rows is None else codes[rows], labels)
        codes, uniques = factorized(values.array, rows)
        return cls(codes, np.array([str(u) for u in uniques], dtype=object))

    @classmethod
    def of_stat(cls, host, name: str, rows: np.ndarray) -> Coded:
        """A stat of ``host`` at ``rows`` coded: ``of`` its events column, of a line's name (``LINE_COLUMNS``), or
        of a stat the host keeps only at the events that carry it (``HostProfile.sparse_stats``), read a chunk of
        rows at a time."""
        if name in LINE_COLUMNS:  # a line's name: its code per line, at the events' lines (an id: ValueError)
            codes, categories = host.line_codes(name)
            return cls(codes[host.line_of(rows)], np.array([str(c) for c in categories], dtype=object))
        stat = host.sparse_stats.get(name)
        if stat is None:
            return cls.of(host.events, name, rows)
        if stat.is_text:  # as ``of`` a categorical column: its codes and categories
            codes = np.empty(len(rows), stat.codes.dtype)
            for low in range(0, len(rows), FACTORIZE_ROWS):
                codes[low:low + FACTORIZE_ROWS] = stat.codes_at(rows[low:low + FACTORIZE_ROWS])
            return cls(codes, np.array([str(c) for c in stat.values], dtype=object))
        codes = np.empty(len(rows), np.int32)
        factorizer = Factorizer()
        for low in range(0, len(rows), FACTORIZE_ROWS):
            codes[low:low + FACTORIZE_ROWS] = factorizer.codes(host.stat_at(name, rows[low:low + FACTORIZE_ROWS]))
        return cls(codes, np.array([str(u) for u in factorizer.uniques], dtype=object))

    def table(self, fn, missing=None) -> np.ndarray:
        """``fn(label)`` per code, with ``missing`` last (what code -1 indexes)."""
        return np.array([fn(label) for label in self.labels] + [missing], dtype=object)

    def hits(self, fn) -> np.ndarray:
        """Rows whose label passes ``fn`` (missing rows never do)."""
        table = np.fromiter((bool(fn(label)) for label in self.labels), dtype=bool, count=len(self.labels))
        return rows_with_codes(self.codes, np.append(table, False))

    def matches(self, pattern: str) -> np.ndarray:
        return self.hits(re.compile(pattern).search)

    def isin(self, values) -> np.ndarray:
        wanted = set(values)
        return self.hits(lambda label: label in wanted)

    def mapped(self, fn, missing: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(codes, labels) of ``fn(label)`` per row: rows whose labels map to one text share a code;
        missing rows take the text ``missing``; ``fn`` returning None (and missing rows without
        ``missing``) give -1."""
        new_labels: dict[str, int] = {}
        table = np.full(len(self.labels) + 1, -1, np.int32)
        for code, label in enumerate(self.labels):
            value = fn(label)
            if value is not None:
                table[code] = new_labels.setdefault(value, len(new_labels))
        if missing is not None:
            table[-1] = new_labels.setdefault(missing, len(new_labels))
        # codes in the narrowest type that also holds one more code (a caller's group of its own)
        return table.astype(code_dtype(len(new_labels) + 1))[self.codes], np.array(list(new_labels), dtype=object)


FEW_CODES = 6
"""Categories a selection compares each row with, one by one; more hit: a lookup per row."""


def rows_with_codes(codes: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """``hit[codes]`` (``hit`` has a last entry for code -1): a comparison per row for each hitting code where
    at most ``FEW_CODES`` hit, nothing where none does."""
    which = np.flatnonzero(hit)
    if not len(which):
        return np.zeros(len(codes), bool)
    if len(which) <= FEW_CODES:  # a comparison per hitting code reads less than a gather per row
        out = codes == which[0] if which[0] < len(hit) - 1 else codes < 0
        for code in which[1:].tolist():
            out |= codes == code if code < len(hit) - 1 else codes < 0
        return out
    return hit[codes]


CHUNK_ROWS = 1 << 20  # rows per pass where a whole-column temporary would cost hundreds of MB
FACTORIZE_ROWS = 1 << 16  # rows per pd.factorize: its hash table is sized to its input, not to the distinct values


class Factorizer:
    """``pd.factorize`` of a long column met a chunk at a time: each value's code is the order of its
    first appearance over all the chunks so far, as one ``pd.factorize`` of the whole column gives it
    (missing values: -1), without a temporary as long as the column."""

    def __init__(self):
        self._codes: dict = {}

    def codes(self, values) -> np.ndarray:
        """The int32 codes of this chunk's values (a numpy or pandas array)."""
        local, uniques = pd.factorize(values, use_na_sentinel=True)
        seen = self._codes
        table = np.fromiter((seen.setdefault(u, len(seen)) for u in uniques), np.int32, len(uniques))
        return np.append(table, np.int32(-1))[local]  # local -1 (missing) takes the appended -1

    @property
    def uniques(self) -> list:
        """The distinct values, in the order of their codes."""
        return list(self._codes)


def factorized(values, rows: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """(int32 codes, distinct values) of ``values`` (a numpy or pandas array; at ``rows``), as
    ``pd.factorize`` gives them, a chunk of rows at a time."""
    n = len(values) if rows is None else len(rows)
    codes = np.empty(n, np.int32)
    factorizer = Factorizer()
    for low in range(0, n, FACTORIZE_ROWS):
        chunk = values[low:low + FACTORIZE_ROWS] if rows is None else values.take(rows[low:low + FACTORIZE_ROWS])
        codes[low:low + FACTORIZE_ROWS] = factorizer.codes(chunk)
    return codes, factorizer.uniques


class Groups:
    """Rows grouped by small integer keys (codes; a row with any key -1 is in no group), the groups in
    order of their first row, as a pandas group-by with ``sort=False`` orders them. Keys are combined
    into one dense number per row, so counting and summing are ``bincount``s, not hashing."""

    DENSE_LIMIT = 1 << 26

    def __init__(self, *keys: np.ndarray):
        n = len(keys[0])
        keys = tuple(np.asarray(key) for key in keys)
        widths = [max(int(key.max()) + 1 if n else 1, 1) for key in keys]
        valid = np.ones(n, bool)
        combinations = math.prod(widths)  # one number per row, of the narrowest type that holds every combination
        dense: np.ndarray = np.zeros(n, code_dtype(combinations) if combinations <= self.DENSE_LIMIT else np.int32)
        size = 1
        for key, width in zip(keys, widths, strict=True):
            valid &= key >= 0
            if size * width > self.DENSE_LIMIT:  # too many combinations for a table: renumber first
                dense[~valid] = -1
                codes, uniques = pd.factorize(dense)
                dense, size = codes.astype(np.int32), len(uniques)
            dense *= width
            dense += key  # rows with a key -1 are left out below
            size *= width
        self.valid = None if valid.all() else valid
        self.key = dense if self.valid is None else dense[valid]
        del dense
        self.size = size
        first = np.full(size, n, np.int64)
        valid_rows = None if self.valid is None else np.flatnonzero(valid)
        for low in range(0, len(self.key), CHUNK_ROWS):  # first row of each key, a chunk at a time
            chunk = self.key[low:low + CHUNK_ROWS]
            unseen = np.flatnonzero(first[chunk] == n)  # only the rows of keys not met in an earlier chunk
            positions = unseen + low if valid_rows is None else valid_rows[low:low + len(chunk)][unseen]
            np.minimum.at(first, chunk[unseen], positions)
        present = np.flatnonzero(first < n)
        self.order = present[np.argsort(first[present], kind="stable")]  # dense key of each group
        self.first_row = first[self.order]

    def __len__(self) -> int:
        return len(self.order)

    def counts(self) -> np.ndarray:
        """Rows per group: ``np.bincount`` of the keys a chunk of rows at a time (numpy makes an int64 copy
        of its input, as long as it)."""
        out = np.zeros(self.size, np.int64)
        for low in range(0, len(self.key), CHUNK_ROWS):
            out += np.bincount(self.key[low:low + CHUNK_ROWS], minlength=self.size)
        return out[self.order]

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Float sum of ``values`` per group (NaN skipped), as pandas' group-by sum gives it. Whole
        numbers whose partial sums stay below 2**53 within a group add up exactly in any order, as
        pandas' compensated sum gives them too: ``bincount``s, a chunk of rows at a time. The other
        groups' values go through pandas' own sum in row order: that of the rows of those groups only
        (each group's compensated sum runs over its own rows in order, whatever the other groups)."""
        values = np.asarray(values)
        if self.valid is not None:
            values = values[self.valid]
        exact = self._exact_sums(values)
        if exact is None:  # not whole numbers: every group by pandas
            sums, inexact = np.zeros(self.size, np.float64), np.ones(self.size, bool)
        else:
            sums, inexact = exact
        if inexact.any():
            sums[inexact] = self._pandas_sums(values, inexact)
        return sums[self.order]

    def _pandas_sums(self, values: np.ndarray | None, chosen: np.ndarray, values_at=None) -> np.ndarray:
        """pandas' group-by sum of the groups of the dense keys where ``chosen`` is set (in order of their
        dense key), from their rows only (``values_at(rows)``: the values at those rows, where ``values`` is None)."""
        rows = chosen[self.key] if not chosen.all() else None
        key = self.key if rows is None else self.key[rows]
        if values is None:
            values = np.asarray(values_at(np.arange(len(self.key)) if rows is None else np.flatnonzero(rows)),
                                np.float64)
        else:
            values = np.asarray(values if rows is None else values[rows], np.float64)
        del rows
        wanted = np.flatnonzero(chosen)
        rank = np.full(self.size, -1, np.int32 if len(wanted) < 2**31 else np.int64)
        rank[wanted] = np.arange(len(wanted))
        codes = pd.Categorical.from_codes(rank[key], categories=pd.RangeIndex(len(wanted)))
        del key
        return pd.Series(values, copy=False).groupby(codes, observed=False, sort=True).sum().to_numpy(np.float64)

    def _exact_sums(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Per dense key, the sum of ``values`` (NaN as 0) where every value is a whole number, and which
        keys' sums may not be exact (a sum of magnitudes of 2**53 or more); None where some value is not a
        whole number."""
        if values.dtype.kind not in "iuf":
            return None
        is_int = values.dtype.kind in "iu"
        sums = np.zeros(self.size, np.float64)
        magnitudes = np.zeros(self.size, np.float64)
        for low in range(0, len(values), CHUNK_ROWS):
            chunk = values[low:low + CHUNK_ROWS]
            if not is_int:
                chunk = np.where(np.isnan(chunk), 0.0, chunk)
                if not np.array_equal(chunk, np.floor(chunk)):
                    return None
            key = self.key[low:low + CHUNK_ROWS]
            chunk_sums = np.bincount(key, weights=chunk, minlength=self.size)
            sums += chunk_sums
            # times and counts are never negative: their sums are their magnitudes, no second bincount
            magnitudes += chunk_sums if not len(chunk) or chunk.min() >= 0 else np.bincount(
                key, weights=np.abs(chunk), minlength=self.size)
        return sums, magnitudes >= 2.0 ** 53


class SumsByRow:
    """``Groups.sums`` and ``float_total`` of per-op values that depend on the op's metadata row only, worked out
    per row from how many ops of each group have it (the groups must be a function of the row: an op's name is
    its metadata's). Whole-number sums below 2**53 (2**52 for the total) are exact in any order, as those give
    them; a group (or a total) past that is pandas' sum of its ops' values, gathered for its ops only."""

    def __init__(self, groups: Groups, row: np.ndarray, used: np.ndarray, count: np.ndarray, group: np.ndarray):
        self.groups, self.row = groups, row
        self.used, self.count, self.group = used, count, group

    @classmethod
    def of(cls, groups: Groups, row: np.ndarray, n_rows: int) -> SumsByRow | None:
        """None where some row's ops are of several groups, or some op is in no group."""
        if groups.valid is not None or not len(row):
            return None
        count = np.zeros(n_rows + 1, np.int64)  # entry 0: the ops without a metadata row (their values are 0)
        group_of_row = np.full(n_rows + 1, -1, np.int64)
        for low in range(0, len(row), CHUNK_ROWS):
            chunk = row[low:low + CHUNK_ROWS] + 1
            count += np.bincount(chunk, minlength=n_rows + 1)
            group_of_row[chunk] = groups.key[low:low + CHUNK_ROWS]  # some op's group: checked next
        for low in range(0, len(row), CHUNK_ROWS):
            chunk = row[low:low + CHUNK_ROWS] + 1
            if np.any((group_of_row[chunk] != groups.key[low:low + CHUNK_ROWS]) & (chunk > 0)):
                return None
        used = np.flatnonzero(count[1:]) + 1
        return cls(groups, row, used - 1, count[used].astype(np.float64), group_of_row[used])

    def sums_and_total(self, per_row: np.ndarray, missing=0, nan_total: bool = False) -> tuple[np.ndarray, float] | None:
        """(the sums of the groups, in their order; the total) of the ops' values ``per_row[row]`` (``missing``
        where the row is -1): ``Groups.sums`` and ``float_total`` (``nan_total``: ``np.nansum``) of them; None
        where they are not whole numbers (NaN, as those skip it, aside)."""
        values = per_row[self.used]
        if values.dtype.kind not in "iuf":
            return None
        if values.dtype.kind == "f":
            values = np.where(np.isnan(values), 0.0, values)
            if not (np.isfinite(values).all() and np.array_equal(values, np.floor(values))):
                return None
        parts = self.count * values.astype(np.float64)  # exact where it matters: below 2**53
        size = self.groups.size
        sums = np.bincount(self.group, weights=parts, minlength=size)
        inexact = np.bincount(self.group, weights=np.abs(parts), minlength=size) >= 2.0 ** 53
        extended = np.append(per_row, np.asarray([missing], per_row.dtype))  # row -1 reads the appended value

        def at(positions: np.ndarray) -> np.ndarray:
            return extended[self.row[positions]]

        if inexact.any():
            sums[inexact] = self.groups._pandas_sums(None, inexact, at)
        # a sum of whole numbers whose magnitudes stay below the limit is exact in any order
        if float(np.abs(parts).sum()) < (2.0 ** 53 if nan_total else 2.0 ** 52):
            total = float(parts.sum())
        else:  # the ops' values as the floats the sum reads them as, NaN as the 0 it adds (no copy of them to fill)
            per_value = extended.astype(np.float64)
            per_value[np.isnan(per_value)] = 0.0
            values = per_value[self.row]
            total = float(np.nansum(values)) if nan_total else float_total(values)
        return sums[self.groups.order], total


def exact_sum(values: np.ndarray) -> float | None:
    """The sum of whole numbers (ints, or floats without fraction or NaN) when every partial sum stays
    below 2**52, so that any summation order gives it exactly; None otherwise."""
    total_abs = 0.0
    is_int = values.dtype.kind in "iu"
    for low in range(0, len(values), CHUNK_ROWS):
        chunk = values[low:low + CHUNK_ROWS]
        if not is_int and not np.array_equal(chunk, np.floor(chunk)):
            return None
        total_abs += float(np.abs(chunk).sum(dtype=np.float64))
        if total_abs >= 2.0 ** 52:
            return None
    return float(values.sum(dtype=np.int64 if is_int else np.float64))


def float_total(values: np.ndarray) -> float:
    """``pd.Series(values.astype(float)).sum()``, without the float copy where the sum is exact anyway."""
    exact = exact_sum(values) if values.dtype.kind in "iuf" else None
    if exact is not None:
        return exact
    return float(pd.Series(np.asarray(values, np.float64), copy=False).sum())

