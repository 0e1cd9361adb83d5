"""An event's line's own columns (``LINE_COLUMNS``) are kept once per line and read at the events from the lines'
counts (the events are stored line after line): what they read is what every event of the line carries in the file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hand_hosts import host_of, line_sorted
from profile_oracle import TPU_CAPTURE, shared_file

from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace import LINE_COLUMNS, decode_host
from tpudoctor.captures.xspace.lookup import run_of_rows


def test_the_run_of_rows_is_a_search_of_the_run_ends_ascending_or_not():
    rng = np.random.default_rng(7)
    for _ in range(200):
        counts = rng.integers(0, 6, rng.integers(1, 12))  # empty runs too
        ends = np.cumsum(counts)
        if not ends[-1]:
            continue
        rows = rng.integers(0, ends[-1], rng.integers(0, 40))
        for asked in (np.sort(rows), rows):
            assert run_of_rows(ends, asked).tolist() == np.searchsorted(ends, asked, side="right").tolist()


def test_line_values_at_any_rows_are_each_events_own_line_in_the_file():
    data = shared_file(TPU_CAPTURE).read_bytes()
    host = decode_host(data, hostname="h", source="t")
    space = message_class("XSpace").FromString(data)
    expected = pd.DataFrame(
        [(p, line.id, plane.name, line.name) for p, plane in enumerate(space.planes) for line in plane.lines
         for _ in line.events], columns=list(LINE_COLUMNS))
    assert not set(LINE_COLUMNS) & set(host.events.columns)
    rows = np.random.default_rng(3).permutation(len(host.events))[:5000]  # out of order
    for name in LINE_COLUMNS:
        assert np.asarray(host.line_values(name), object).tolist() == expected[name].tolist(), name
        assert np.asarray(host.line_values(name, rows), object).tolist() == expected[name].to_numpy()[rows].tolist()
    joined = host.with_line_columns(host.events.iloc[rows])
    assert joined[list(LINE_COLUMNS)].astype(object).values.tolist() == expected.iloc[rows].values.tolist()


def test_lines_that_do_not_count_the_events_are_an_error_not_a_wrong_line():
    frame = line_sorted(pd.DataFrame({"plane_id": [0, 0, 1], "line_id": [1, 2, 1], "name": ["a", "b", "c"],
                                      "start_ps": [0, 1, 2], "duration_ps": [1, 1, 1]}))
    host = host_of(frame)
    assert host.line_values("line_id").tolist() == [1, 2, 1]
    host.events = host.events.iloc[:2]
    host.__dict__.pop("line_first_rows", None)
    with pytest.raises(ValueError, match="the lines count 3 events, the events table has 2"):
        host.line_of()
