"""Log diagnosis on damaged real logs: always a list of diagnoses, never an exception or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutations import damaged, time_bound

from tpudoctor.findings import Finding, FindingKind, Status
from tpudoctor.logdiag import cause_of, diagnose_lines, diagnose_text

# real/ included; the held-out sets (heldout/, heldout2/, ...) are not: each is scored as frozen, never read while
# changing the diagnoser.
LOGS = sorted(p for p in (Path(__file__).resolve().parents[1] / "data" / "logs").rglob("*.log")
              if not any(part.startswith("heldout") for part in p.parts))
CORPUS = [p.read_bytes() for p in LOGS]
TRACEBACK = "Traceback (most recent call last):\n" + "".join(
    f'  File "/usr/lib/python3/site-packages/jax/_src/f{i}.py", line {i}, in f{i}\n    f{i + 1}()\n' for i in range(3000)
) + "RuntimeError: Unavailable: Socket closed\n"


def _check(diagnoses: list) -> None:
    assert isinstance(diagnoses, list)
    for d in diagnoses:
        assert isinstance(d, Finding) and d.kind is FindingKind.LOG and d.status in (Status.FAIL, Status.WARN)
        assert d.evidence["count"] >= 1 and d.title and cause_of(d) and d.remediation is not None


@given(damaged(CORPUS))
def test_damaged_real_logs(data):
    text = data.decode("utf-8", errors="replace")
    with time_bound():
        _check(diagnose_text(text, source="fuzz.log"))


@given(st.lists(st.text(max_size=200), max_size=50))
def test_arbitrary_lines(lines):
    with time_bound():
        _check(diagnose_lines(lines, source="fuzz.log"))


@settings(max_examples=max(25, settings.default.max_examples // 5))  # 1-4 MB each: a fifth of the profile's
@given(st.sampled_from(CORPUS), st.integers(1, 4), st.sampled_from(["x", "\x00", "\u00e9", "Socket closed ", "%"]))
def test_huge_lines_and_binary_garbage(data, megabytes, filler):
    """A 1-4 MB single line (a dumped tensor, a binary blob) among real lines stays linear."""
    huge = filler * (megabytes * (1 << 20) // len(filler.encode()))
    text = data.decode("utf-8", errors="replace") + huge + "\n" + bytes(range(256)).decode("latin-1") * 64
    with time_bound():
        _check(diagnose_text(text, source="fuzz.log"))


def test_deep_traceback_is_diagnosed_in_bounded_time():
    with time_bound(5.0):
        found = diagnose_text(TRACEBACK * 3, source="deep.log")
    assert found, "a Socket closed error at the end of a 3000-frame traceback must still be found"


def test_bounded_lines_reads_an_overlong_line_in_overlapping_windows_and_keeps_the_next_line():
    import io

    from tpudoctor.logs.sources import MAX_LINE_CHARS, WINDOW_OVERLAP, LinePiece, bounded_lines

    long = "".join(chr(ord("a") + i % 26) for i in range(3 * MAX_LINE_CHARS))
    lines = list(bounded_lines(io.StringIO(long + "\nnext line\nlast")))
    pieces = [x for x in lines if isinstance(x, LinePiece)]
    assert lines[0] == long[:MAX_LINE_CHARS] and pieces and all(len(p) <= MAX_LINE_CHARS + 1 for p in lines[:-2])
    assert lines[-2:] == ["next line\n", "last"]
    for before, after in zip(lines[:len(pieces)], lines[1:len(pieces) + 1], strict=True):  # each window repeats the last overlap
        assert after.startswith(before[-WINDOW_OVERLAP:])
    rebuilt = lines[0] + "".join(p[WINDOW_OVERLAP:] for p in pieces)
    assert rebuilt.rstrip("\n") == long, "nothing of the line is cut"


@pytest.mark.parametrize("where", ["start", "window edge", "end"])
def test_a_failure_anywhere_in_an_overlong_line_is_found(where):
    """'x'*4100 + ' UNAVAILABLE: Socket closed' was PASS: the line was cut at 4,000 characters."""
    from tpudoctor.logs.sources import MAX_LINE_CHARS

    failure = "UNAVAILABLE: Socket closed"
    at = {"start": 0, "window edge": MAX_LINE_CHARS - len(failure) // 2, "end": 5 * MAX_LINE_CHARS}[where]
    line = "x" * at + " " + failure + " " + "y" * 100
    for text in (line + "\n", "E0501 10:00:00.000000 1 a.cc:1] " + line + "\n"):
        found = diagnose_text("step 1\n" + text + "step 2\n", source="long.log")
        assert [d.id for d in found] == ["socket-closed"], where
        assert found[0].evidence["first_line_no"] == 2


def test_a_huge_line_without_newline_needs_no_more_memory_than_a_short_one(tmp_path):
    """Regression: iterating the file read a 300 MB line whole (644 MB peak RSS); now ~15 MB."""
    import subprocess
    import sys

    path = tmp_path / "blob.log"
    with open(path, "w") as handle:
        for _ in range(64):
            handle.write("x" * (1 << 20))
        handle.write("\nRESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm.\n")
    code = ("import resource, sys\nfrom tpudoctor.logdiag.diagnose import diagnose_file\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "found = [d.id for d in diagnose_file(sys.argv[1])]\n"
            "print(found, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    found, grown_kb = out.rsplit(" ", 1)
    assert "hbm-oom" in found
    assert int(grown_kb) < 32 * 1024, f"peak RSS grew {grown_kb} kB for a 64 MB line"
