"""One units module (tpudoctor.units): one size reader, one byte formatter, one duration formatter, and the
call sites that used their own agreeing with it."""

from __future__ import annotations

import math

import pytest

from tpudoctor import units
from tpudoctor.checks.gcs.data_objects import DataPrefixHasObjects
from tpudoctor.facts import Facts
from tpudoctor.findings import Status
from tpudoctor.units import (
    MAX_SIZE_BYTES,
    UnreadableSize,
    format_bytes,
    format_duration,
    format_ps,
    format_si,
    parse_size,
)

TIB = 1 << 40


@pytest.mark.parametrize(("n", "shown"), [
    (0, "0 B"), (12, "12 B"), (-5, "-5 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (1536, "1.50 KiB"),
    (3 << 20, "3.00 MiB"), (round(-2.55 * 2**30), "-2.55 GiB"), (5 * TIB, "5.00 TiB"), (3 << 50, "3.00 PiB"),
    (MAX_SIZE_BYTES, "8.00 EiB"), (20.02 * 2**30, "20.02 GiB"),
])
def test_one_answer_for_each_size(n, shown):
    assert format_bytes(n) == shown


def test_a_count_beyond_any_memory_is_shown_as_itself():
    """A forged evidence value (10**400 bytes) is no float; it is printed as the count, not an overflow."""
    assert format_bytes(10**400) == f"{10**400} B"
    assert format_bytes(1 << 70) == f"{1 << 70} B"
    assert format_bytes(math.inf) == "inf B"


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "unknown"), (math.nan, "unknown"), (math.inf, "unknown"), (0, "0 s"), (40e-9, "40 ns"),
    (3.2e-6, "3.2 us"), (0.25, "250 ms"), (1, "1.0 s"), (12.34, "12.3 s"), (119.9, "119.9 s"),
    (120, "2.0 min"), (4000, "1.11 h"), (-3, "-3.0 s"),
    (0.9996, "1.0 s"), (0.0009996, "1 ms"), (-0.9996, "-1.0 s"), (0.000999, "999 us"),  # was "1e+03 ms"
])
def test_one_answer_for_each_duration(seconds, shown):
    assert format_duration(seconds) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (None, "n/a"), (math.nan, "n/a"), (math.inf, "n/a"), (0.0, "0 FLOP/s"), (512.0, "512 FLOP/s"),
    (1.23e12, "1.23 TFLOP/s"), (9.18e14, "918 TFLOP/s"), (1.6e15, "1.6 PFLOP/s"), (8.19e11, "819 GFLOP/s"),
])
def test_one_answer_for_each_rate(value, shown):
    """The roofline's rates (v5e's 197 TFLOP/s peak, an op's 819 GB/s): three significant digits under an SI prefix."""
    assert format_si(value, "FLOP/s") == shown


@pytest.mark.parametrize(("value_ps", "shown"), [
    (None, "-"), (0, "-"), (640, "640 ps"), (1_500, "1.5 ns"), (27_600_000_000, "27.6 ms"),
    (1_490_000_000_000, "1.49 s"), (1_234_000_000_000_000, "1,234 s"), (99_960_000, "100 us"),
])
def test_one_answer_for_each_capture_span(value_ps, shown):
    """A capture's span keeps three digits where ``format_duration`` would round a second to one decimal."""
    assert format_ps(value_ps) == shown


def test_the_size_reader_keeps_its_bounds():
    assert parse_size("15.48G") == round(15.48 * 2**30) and parse_size("8.00E") == MAX_SIZE_BYTES
    for text in ("9E", "1" * 400, "12 parsecs", ""):
        with pytest.raises(UnreadableSize):
            parse_size(text)


def test_the_log_layer_and_logdiag_read_sizes_with_the_one_reader():
    from tpudoctor.logdiag import parse_bytes
    from tpudoctor.logs import sizes

    assert sizes.parse_size is units.parse_size and parse_bytes is units.parse_size
    assert sizes.Size is units.Size and sizes.MAX_SIZE_BYTES == units.MAX_SIZE_BYTES


def test_the_compile_preflight_reads_the_compilers_size_as_the_oom_reader_does():
    """The preflight had its own reader, which cut the bytes short where the log layer rounds: 25.03G (a
    compile error JAX raised, tests/memory/test_memory_preflight_fixtures.py) was 26875757854 bytes to one, 26875757855
    to the other."""
    from tpudoctor.preflight.compiler import read_out_of_memory

    error = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO temporaries "
             "(25.03G) exceeds available HBM (15.75G).")
    assert read_out_of_memory(error).required_bytes == parse_size("25.03G") == round(25.03 * 2**30)


def test_gcs_data_objects_show_sizes_as_every_other_report():
    """GCS-005 had its own formatter (one decimal): 5 TiB read ``5.0 TiB`` there, ``5120.00 GiB`` in memory's
    findings and ``5.00 TiB`` in evidence tables."""
    objects = {"gs://b/train": {"bucket": "b", "prefix": "train", "object_count": 7, "total_bytes": 5 * TIB,
                                "truncated": False, "empty_object_count": 0, "failure": None},
               "gs://b/eval": {"bucket": "b", "prefix": "eval", "object_count": 2, "total_bytes": 1536,
                               "truncated": False, "empty_object_count": 0, "failure": None}}
    result = DataPrefixHasObjects().evaluate(Facts({"gcs.objects": objects}))
    assert result.status is Status.PASS
    assert result.message == "gs://b/train: 7 objects, 5.00 TiB; gs://b/eval: 2 objects, 1.50 KiB"


def test_memory_findings_show_a_terabyte_peak_in_tebibytes():
    """Memory's own formatter stopped at GiB: a 5 TiB figure read ``5120.00 GiB``."""
    from tpudoctor.memory import fix_rule

    assert fix_rule.format_bytes(5 * TIB) == "5.00 TiB"
