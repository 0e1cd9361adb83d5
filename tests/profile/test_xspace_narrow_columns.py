"""The events table keeps each column in the narrowest type that holds its values (``captures/xspace/tables``):
measured on the shared real captures, the bytes its columns hold per event, and the kept types."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from paths import REPO
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, shared_file

from tpudoctor.captures.xspace import LINE_COLUMNS, LoadOptions, decode_host, decoder, tables

BENCHMARK = REPO / "benchmarks" / "capture_memory.py"


def _table_bytes(frame: pd.DataFrame) -> int:
    """``benchmarks/capture_memory.py``'s measure: every buffer once, none for all-missing views."""
    spec = importlib.util.spec_from_file_location("capture_memory", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.table_bytes(frame)


# (capture, stats) -> bytes per event at most; at 0ab43d1: TPU 61 and 137, GPU 45 and 109; at 03a1ec9, before the
# line columns were kept once per line: TPU 27 and 105, GPU 32 and 70
BOUNDS = {(TPU_CAPTURE, "analysis"): 20, (TPU_CAPTURE, "all"): 98, (GPU_CAPTURE, "analysis"): 22,
          (GPU_CAPTURE, "all"): 60}


@pytest.mark.parametrize(("name", "stats"), list(BOUNDS))
def test_events_table_bytes_per_event_on_real_captures(name, stats):
    options = LoadOptions.for_analysis() if stats == "analysis" else LoadOptions()
    events = decode_host(shared_file(name).read_bytes(), hostname="h", source=name, options=options).events
    per_event = _table_bytes(events) / len(events)
    assert per_event <= BOUNDS[name, stats], f"{per_event:.1f} bytes per event"


def test_kept_types_on_the_gpu_capture():
    host = decode_host(shared_file(GPU_CAPTURE).read_bytes(), hostname="h", source=GPU_CAPTURE)
    events = host.events
    assert events["metadata_id"].dtype == np.int16
    # a line's own columns are kept once per line, read at the events from the lines table
    assert not set(LINE_COLUMNS) & set(events.columns)
    assert (np.asarray(host.line_values("plane_name").astype(str))
            == host.planes["plane_name"].to_numpy()[host.line_values("plane_id")]).all()
    assert events["group_id"].dtype == "Int8" and events["group_id"].max() == 6  # a label: its values fit 8 bits
    for quantity in ("start_ps", "duration_ps"):
        assert events[quantity].dtype == np.int64
    for quantity in ("flops", "bytes_accessed", "program_id"):  # arithmetic on them cannot overflow
        assert events[quantity].dtype in ("Int64", "UInt64")


def test_label_values_that_need_more_bits_keep_them():
    n = 5
    sink = tables._ColumnSink("int", n)
    raw = np.array([3, -(1 << 40), 7, 0, 1], dtype=np.int64).view(np.uint64)
    sink.put(np.arange(n), raw, np.full(n, decoder.INT64, dtype=np.int8))
    column = sink.array(narrow=True)
    assert column.dtype == "Int64" and column.tolist() == [3, -(1 << 40), 7, 0, 1]
    small = tables._ColumnSink("uint", n)
    small.put(np.array([0, 2]), np.array([200, 255], dtype=np.uint64), np.full(2, decoder.UINT64, dtype=np.int8))
    column = small.array(narrow=True)
    assert column.dtype == "UInt8" and column.tolist() == [200, pd.NA, 255, pd.NA, pd.NA]


def test_a_text_column_past_int16_codes_keeps_every_value():
    n = 40_000  # more distinct values than int16 codes hold: the column widens while it is filled
    sink = tables._ColumnSink("str", n)
    sink.categories = {f"op{i}": i for i in range(n)}
    sink.put_codes(np.arange(n)[::-1].copy(), np.arange(n, dtype=np.int32))
    values = sink.array()
    assert values.codes.dtype == np.int32 and values[0] == f"op{n - 1}" and values[n - 1] == "op0"
