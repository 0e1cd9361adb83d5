"""Reading a capture plane by plane (large files) gives the same tables as reading it whole."""

from __future__ import annotations

import pandas as pd
import pytest
from paths import TESTS
from profile_oracle import GPU_CAPTURE, TPU_CAPTURE, shared_file

from tpudoctor.captures.xspace import (
    ANALYSIS_STAT_COLUMNS,
    CORE_STAT_COLUMNS,
    LoadOptions,
    decode_host,
    decode_host_file,
    planes_on_disk,
    reader,
)
from tpudoctor.errors import InputError

FIXTURES = TESTS / "fixtures" / "profiles"


def _captures():
    yield FIXTURES / "multihost_recompiling" / "plugins" / "profile" / "2026_11_30_12_00_00" / "worker2.xplane.pb"
    yield FIXTURES / "tf_input_bound" / "localhost.xplane.pb"


@pytest.mark.parametrize("stats", [None, ANALYSIS_STAT_COLUMNS], ids=["all-stats", "analysis-stats"])
@pytest.mark.parametrize("path", list(_captures()), ids=lambda p: p.parent.name if p.parent.name != "2026_11_30_12_00_00" else "multihost")
def test_plane_by_plane_equals_whole_file(monkeypatch, path, stats):
    options = LoadOptions() if stats is None else LoadOptions(stats=stats)
    whole = decode_host(path.read_bytes(), hostname="h", source=str(path), options=options)
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    streamed = decode_host_file(str(path), hostname="h", source=str(path), options=options)
    pd.testing.assert_frame_equal(streamed.events, whole.events)
    pd.testing.assert_frame_equal(streamed.lines, whole.lines)
    pd.testing.assert_frame_equal(streamed.planes, whole.planes)
    assert streamed.plane_stats == whole.plane_stats and streamed.time_origin_ns == whole.time_origin_ns
    if stats is not None:  # the narrow read decodes only what the analyses use
        decoded = set(streamed.events.columns) - {"plane_id", "line_id", "plane_name", "line_name", "metadata_id",
                                                   "name", "start_ps", "duration_ps"}
        assert decoded <= set(ANALYSIS_STAT_COLUMNS)
        assert set(CORE_STAT_COLUMNS) & set(ANALYSIS_STAT_COLUMNS) <= decoded  # core ones asked for: always there


def test_real_tpu_capture_plane_by_plane(monkeypatch):
    path = shared_file(TPU_CAPTURE)
    whole = decode_host(path.read_bytes(), hostname="h", source=str(path))
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    streamed = decode_host_file(str(path), hostname="h", source=str(path))
    pd.testing.assert_frame_equal(streamed.events, whole.events)


@pytest.mark.parametrize("window", [23, 100, 4096])
def test_plane_fields_walked_from_small_windows_equal_the_whole_read(monkeypatch, window):
    """The GPU capture's planes hold thousands of metadata entries: with a small window their heads
    cross its end again and again, and the lines and header found must still be protobuf's."""
    path = shared_file(GPU_CAPTURE)
    whole = decode_host(path.read_bytes(), hostname="h", source=str(path))
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(planes_on_disk, "LAYOUT_WINDOW", window)
    streamed = decode_host_file(str(path), hostname="h", source=str(path))
    for table in ("events", "lines", "planes", "event_metadata"):
        pd.testing.assert_frame_equal(getattr(streamed, table), getattr(whole, table))
    assert streamed.plane_stats == whole.plane_stats


def test_a_truncated_large_file_still_says_it_is_truncated(monkeypatch, tmp_path):
    data = (FIXTURES / "tf_input_bound" / "localhost.xplane.pb").read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(data[: len(data) * 2 // 3])
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    with pytest.raises(InputError, match="truncated"):
        decode_host_file(str(cut), hostname="h", source=str(cut))


@pytest.mark.parametrize("where", ["plane-field-length", "line-bytes"])
def test_damage_inside_a_plane_read_line_by_line_is_a_clear_error(monkeypatch, tmp_path, where):
    from tpudoctor.captures.wire import read_varint

    data = bytearray((FIXTURES / "tf_input_bound" / "localhost.xplane.pb").read_bytes())
    _, at = read_varint(data, 0)  # the first plane: tag, then its length
    _, plane_start = read_varint(data, at)
    if where == "plane-field-length":  # its first field claims more bytes than the plane has
        tag_end = plane_start + 1
        data[tag_end:tag_end + 5] = b"\xff\xff\xff\xff\x0f"
    else:  # bytes in the middle of the plane overwritten
        middle = plane_start + (len(data) - plane_start) // 3
        data[middle:middle + 16] = b"\xff" * 16
    damaged = tmp_path / "damaged.xplane.pb"
    damaged.write_bytes(bytes(data))
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    with pytest.raises(InputError, match="corrupt|truncated"):
        decode_host_file(str(damaged), hostname="h", source=str(damaged))



def test_lines_read_for_the_headers_are_kept_for_the_events(monkeypatch):
    """The decoder reads every line twice (headers, then events): the first read is kept for the second up to
    ``HELD_LINES_BYTES``, so each line of a capture under it is read from the file once; beyond it, the lines
    that did not fit are read again. The tables are the whole read's either way."""
    path = shared_file(GPU_CAPTURE)
    whole = decode_host(path.read_bytes(), hostname="h", source=str(path))
    monkeypatch.setattr(reader, "STREAM_MIN_BYTES", 0)
    file_read = planes_on_disk.CaptureFile.read
    read: list[int] = []

    def counting(capture, size):
        read.append(size)
        return file_read(capture, size)

    monkeypatch.setattr(planes_on_disk.CaptureFile, "read", counting)
    with open(path, "rb") as handle:
        capture = planes_on_disk.CaptureFile(handle, b"")
        found, _errors, _warnings = planes_on_disk.layout(capture, path.stat().st_size)
        lines = [span for offset, length in found for span in planes_on_disk._plane_layout(capture, offset, length)[1]]
    lines_bytes = sum(length for _offset, length in lines)
    assert len(lines) > 5 and lines_bytes > 1_500_000  # 1.86 of its 3.04 MB
    bytes_read = {}
    for held in (planes_on_disk.HELD_LINES_BYTES, lines_bytes // 2, 0):
        monkeypatch.setattr(planes_on_disk, "HELD_LINES_BYTES", held)
        read.clear()
        streamed = decode_host_file(str(path), hostname="h", source=str(path))
        bytes_read[held] = sum(read)
        for table in ("events", "lines", "planes", "event_metadata"):
            pd.testing.assert_frame_equal(getattr(streamed, table), getattr(whole, table))
    kept_all, kept_some, kept_none = bytes_read.values()
    assert kept_none - kept_all == lines_bytes
    assert kept_all < kept_some < kept_none
