"""``tpudoctor memory`` on hostile text inputs (the 2026-12-04 probe's N8, N10, N25): a size no byte count reaches,
binary input, /dev/zero, a gzip bomb, gzip on stdin, and a log too large to hold; each gives exit 2 with the reason,
or is read in bounded memory. Real listings from tests/data/memory."""

from __future__ import annotations

import gzip
import io
import os
import random
import tracemalloc

import pytest
from paths import TESTS

from tpudoctor import cli
from tpudoctor.logdiag import parse_bytes
from tpudoctor.logs.oom import parse_oom_reports, read_oom_text
from tpudoctor.logs.sizes import MAX_SIZE_BYTES, UnreadableSize, parse_size
from tpudoctor.memory import pipeline

DATA = TESTS / "data" / "memory"
RUNTIME_LOG = DATA / "trax_431_runtime_allocate_fragmentation.log"
COMPILE_LOG = DATA / "easydel_166_compile_hbm_report.log"
HUGE = "9" * 400
# the probe's lines: a real run-time, compile-time and reservation line with one figure 400 digits long
OVERSIZED = {
    "allocate": f"RuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate {HUGE}M. That was not possible. "
                "There are 58.64M free.",
    "used": f"RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used {HUGE}G of 15.48G hbm. "
            "Exceeded hbm capacity by 1.0G.",
    "reserve": f"Attempting to reserve {HUGE}G at the bottom of memory. That was not possible. There are 1.92G free, "
               "0B reserved, and 1.92G reservable.",
}


def _memory(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


# --- N8: one bounded size reader -------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [HUGE + "M", "1" + "0" * 30, "9" * 20 + "E", "8.01E", "-9.00E"])
def test_a_size_beyond_any_byte_count_is_unreadable_in_both_readers(text):
    with pytest.raises(UnreadableSize):
        parse_size(text)
    with pytest.raises(ValueError):  # logdiag's reader is the same one
        parse_bytes(text)


def test_the_largest_sizes_xla_prints_still_read():
    assert parse_size("8.00E") == MAX_SIZE_BYTES and parse_size("3.47E") == round(3.47 * 2**60)
    assert parse_bytes("15.48G") == parse_size("15.48G") == round(15.48 * 2**30)


@pytest.mark.parametrize("form", sorted(OVERSIZED))
def test_an_oversized_figure_is_refused_with_exit_2_naming_the_line(capsys, tmp_path, form):
    log = tmp_path / "h2.log"
    log.write_text(OVERSIZED[form] + "\n")
    code, out, err = _memory(capsys, str(log))
    assert code == 2 and out == "", err
    assert "listing cannot be read (line 1:" in err and "400 digits" in err and "internal error" not in err


def test_an_oversized_listing_beside_a_readable_one_is_left_out_with_a_warning(capsys, tmp_path):
    log = tmp_path / "two.log"
    log.write_text(RUNTIME_LOG.read_text() + "\n" + OVERSIZED["allocate"] + "\n")
    code, out, err = _memory(capsys, str(log), "--format", "json")
    import json

    doc = json.loads(out)
    assert code == 1 and len(doc["texts"][0]["listings"]) == 1
    (warn,) = [f for f in doc["findings"] if f["id"] == "memory-oom-unreadable"]
    assert warn["status"] == "WARN" and "400 digits" in warn["message"]


def test_check_step_4_reads_an_oversized_figure_without_crashing(capsys, tmp_path):
    log = tmp_path / "h2.log"
    log.write_text(OVERSIZED["allocate"] + "\n")
    code = cli.main(["check", "--step", "4", "--log-file", str(log), "--format", "json"])
    out, err = capsys.readouterr()
    assert "OverflowError" not in out + err and "internal error" not in err
    assert code in (0, 1)


# --- N10: streamed, bounded reads --------------------------------------------------------------------------------

def test_the_streamed_reader_finds_what_the_whole_text_parse_finds():
    for log in sorted(DATA.glob("*.log")) + sorted(DATA.glob("*.txt")):
        with open(log, encoding="utf-8", errors="replace") as handle:
            streamed = read_oom_text(handle)
        assert streamed.reports == parse_oom_reports(log.read_text(errors="replace")), log.name


def test_a_large_log_is_read_in_bounded_memory(tmp_path):
    noise = "".join(f"I1204 10:00:{i % 60:02d}.000000 1000 train.py:{i}] step {i} loss 1.2345 throughput 512.0 "
                    "examples/s\n" for i in range(2000))
    listing = RUNTIME_LOG.read_text()
    log = tmp_path / "big.log"
    with open(log, "w") as handle:
        for _ in range(100):  # 100 x (2000 noise lines + a real listing): about 20 MB
            handle.write(noise)
            handle.write(listing)
    size = log.stat().st_size
    tracemalloc.start()
    try:
        with open(log, "rb") as handle:
            text = pipeline.read_text(str(log), handle)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(text.oom.reports) == 100 and text.oom.lines > 200_000
    assert peak < size / 4, f"{peak:,} bytes held reading a {size:,}-byte log"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_is_refused_as_binary_at_once(capsys):
    code, out, err = _memory(capsys, "/dev/zero")
    assert code == 2 and "/dev/zero is binary: it holds NUL bytes" in err


def test_a_gzip_bomb_of_zeros_is_refused_as_binary(capsys, tmp_path):
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(bytes(64 << 20), compresslevel=9))
    code, out, err = _memory(capsys, str(bomb))
    assert code == 2 and "bomb.log.gz is binary: it holds NUL bytes" in err


def test_a_gzip_bomb_of_text_is_refused_past_the_ratio(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "GZIP_BOMB_MIN_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.log.gz"
    bomb.write_bytes(gzip.compress(b"a\n" * (16 << 20), compresslevel=9))
    code, out, err = _memory(capsys, str(bomb))
    assert code == 2 and "a gzip bomb, not a log" in err


def test_text_past_the_byte_cap_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "MAX_TEXT_BYTES", 1 << 20)
    log = tmp_path / "long.log"
    log.write_text(("step 1 loss 1.0\n" * (1 << 17)) + RUNTIME_LOG.read_text())
    code, out, err = _memory(capsys, str(log))
    assert code == 2 and "holds more than" in err and "of text" in err


# --- N25: what the input is --------------------------------------------------------------------------------------

def test_random_bytes_are_named_binary(capsys, tmp_path):
    blob = tmp_path / "rand.bin"
    blob.write_bytes(random.Random(4).randbytes(100_000))
    code, out, err = _memory(capsys, str(blob))
    assert code == 2 and "rand.bin is binary" in err and "no out-of-memory report" not in err


def test_gzip_on_stdin_is_told_by_its_magic_bytes(capsys, monkeypatch):
    data = gzip.compress(RUNTIME_LOG.read_bytes())
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = _memory(capsys, "-")
    assert code == 1 and "allocating" in out, err


def test_a_gz_name_holding_plain_text_reads(capsys, tmp_path):
    log = tmp_path / "plain.log.gz"
    log.write_bytes(COMPILE_LOG.read_bytes())
    code, out, err = _memory(capsys, str(log))
    assert code == 1 and "63.80 GiB used" in out, err
