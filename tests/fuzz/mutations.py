"""Hypothesis strategies that damage real inputs the ways files and logs get damaged.

Shared by the fuzz tests (``tests/fuzz``) and the atheris harnesses (``fuzz/``).
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

from hypothesis import strategies as st

PER_INPUT_LIMIT_S = 10.0
"""Any single input that takes longer than this is a hang: a bug, whatever the answer."""


def flip_bytes(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    buf = bytearray(data)
    for pos, byte in edits:
        if buf:
            buf[pos % len(buf)] = byte
    return bytes(buf)


def truncate(data: bytes, fraction: float) -> bytes:
    return data[: int(len(data) * fraction)]


def splice(a: bytes, b: bytes, cut_a: float, cut_b: float) -> bytes:
    """The head of one file glued to the tail of another (an interrupted copy, a concatenation)."""
    return a[: int(len(a) * cut_a)] + b[int(len(b) * cut_b):]


def text_mode_corruption(data: bytes) -> bytes:
    """What a binary file looks like after a text-mode round trip (bytes -> U+FFFD -> UTF-8)."""
    return data.decode("utf-8", errors="replace").encode("utf-8")


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def length_lie(data: bytes, position: float, claimed: int) -> bytes:
    """Rewrite the first length-delimited field at/after ``position`` to claim ``claimed`` bytes."""
    start = int(len(data) * position)
    for i in range(start, min(len(data), start + 4096)):
        if data[i] & 0x07 == 2 and data[i] >> 3 in range(1, 16):  # a wire-type-2 tag byte
            j = i + 1
            while j < len(data) and data[j] & 0x80:
                j += 1
            return data[: i + 1] + varint(claimed) + data[j + 1:]
    return data


def damaged(sources: list[bytes]) -> st.SearchStrategy[bytes]:
    """Real inputs (``sources``) damaged in every way above."""
    pick = st.sampled_from(sources)
    fractions = st.floats(0.0, 1.0, allow_nan=False)
    return st.one_of(
        st.tuples(pick, st.lists(st.tuples(st.integers(0, 1 << 30), st.integers(0, 255)), min_size=1, max_size=16))
        .map(lambda t: flip_bytes(*t)),
        st.tuples(pick, fractions).map(lambda t: truncate(*t)),
        st.tuples(pick, pick, fractions, fractions).map(lambda t: splice(*t)),
        pick.map(text_mode_corruption),
        st.tuples(pick, fractions, st.sampled_from([0, 1, 127, 128, 1 << 20, 1 << 31, (1 << 63) - 1, (1 << 64) - 1]))
        .map(lambda t: length_lie(*t)),
        st.binary(max_size=256),
    )


class Hang(Exception):
    pass


@contextmanager
def time_bound(limit_s: float = PER_INPUT_LIMIT_S):
    """Fail an input that runs past ``limit_s`` (SIGALRM: main thread, POSIX)."""
    def _alarm(signum, frame):
        raise Hang(f"one input ran past {limit_s:g}s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
