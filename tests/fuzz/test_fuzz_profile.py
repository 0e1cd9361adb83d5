"""The XSpace loader on damaged real captures: a HostProfile or an InputError, never another
exception, a hang, or memory out of proportion to the file."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
from hypothesis import given
from mutations import damaged, length_lie, text_mode_corruption, time_bound, truncate
from shared_data import SHARED_DATA

from tpudoctor.errors import InputError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "tests" / "fixtures" / "profiles").glob("*/*.xplane.pb"))
SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
SMALL = [p.read_bytes() for p in FIXTURES]
# Growth of peak RSS allowed per input, as a multiple of the input's size plus a floor: a length
# field that lies must not make the loader allocate what the lie claims.
RSS_FLOOR_BYTES = 256 << 20
RSS_PER_INPUT_BYTE = 40


def _decode(data: bytes):
    from tpudoctor.captures.xspace import HostProfile, decode_host

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with time_bound():
        try:
            host = decode_host(data, hostname="fuzz", source="fuzz.xplane.pb")
        except InputError as exc:
            assert exc.message and "fuzz.xplane.pb" in exc.message
            host = None
        else:
            assert isinstance(host, HostProfile)
            assert len(host.events) == int(host.lines["n_events"].sum())
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < RSS_FLOOR_BYTES + RSS_PER_INPUT_BYTE * len(data), f"peak RSS grew {grown} bytes"
    return host


@pytest.mark.skipif(not SMALL, reason="no committed fixture captures under tests/fixtures/profiles")
@given(damaged(SMALL or [b""]))
def test_damaged_fixture_captures(data):
    _decode(data)


@pytest.mark.needs_shared_data
@pytest.mark.parametrize("damage", ["truncate-half", "truncate-tail", "text-mode", "length-lie-huge",
                                    "length-lie-zero"])
def test_real_tpu_capture_damage(shared_data, damage):
    data = (shared_data / "xprof_tpu_inference_2.xplane.pb").read_bytes()
    damaged_bytes = {
        "truncate-half": lambda: truncate(data, 0.5),
        "truncate-tail": lambda: data[:-3],
        "text-mode": lambda: text_mode_corruption(data),
        "length-lie-huge": lambda: length_lie(data, 0.3, (1 << 63) - 1),
        "length-lie-zero": lambda: length_lie(data, 0.6, 0),
    }[damage]()
    _decode(damaged_bytes)


def test_a_capture_too_big_for_this_machine_is_refused_clearly(monkeypatch):
    import tpudoctor.profile
    from tpudoctor.profile import memory

    monkeypatch.setattr(memory, "available_memory_bytes", lambda: 100_000)
    with pytest.raises(InputError, match=r"needs about .* GB of memory .* available"):
        tpudoctor.profile.load(str(FIXTURES[0]))


def test_memory_guard_lets_a_normal_capture_load():
    import tpudoctor.profile

    capture = tpudoctor.profile.load(str(FIXTURES[0]))
    assert capture.hosts and not capture.failed_hosts
