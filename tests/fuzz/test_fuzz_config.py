"""Config files and duration/percentage flags: any input gives a value or a UsageError, nothing else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tpudoctor.config import load_config_file, parse_duration_s, parse_percent
from tpudoctor.errors import UsageError

VALID = b'project = "p"\nzone = "us-central2-b"\ntpu = "t"\ndata = ["gs://b/x"]\nsince = "2h"\n'


def mutate(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    buf = bytearray(data)
    for pos, byte in edits:
        if buf:
            buf[pos % len(buf)] = byte
    return bytes(buf)


@given(st.one_of(
    st.binary(max_size=400),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=8).map(lambda e: mutate(VALID, e)),
))
def test_config_file_reader_never_crashes(tmp_path_factory, content):
    folder = tmp_path_factory.mktemp("cfg")
    (folder / "tpudoctor.toml").write_bytes(content)
    try:
        settings, path = load_config_file(folder)
    except UsageError as exc:
        assert str(folder) in exc.message
    else:
        assert isinstance(settings, dict) and path is not None


@given(st.text(max_size=30))
def test_duration_parser_gives_seconds_or_usage_error(text):
    try:
        value = parse_duration_s(text)
    except UsageError:
        return
    assert isinstance(value, float) and 0 <= value < float("inf")


def test_non_finite_and_negative_durations_are_refused():
    import pytest

    for text in ("nan", "inf", "-5s", "1e400h"):
        with pytest.raises(UsageError):
            parse_duration_s(text)


@given(st.text(max_size=30))
def test_percent_parser_gives_a_percentage_or_usage_error(text):
    try:
        value = parse_percent(text)
    except UsageError:
        return
    assert 0 <= value < 100
