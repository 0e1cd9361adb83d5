"""The diff against the last good run (after ByteDance's LogSage): mine the templates of a failing log and of a
good run of the same job (Drain, through the ``drain3`` package), and rank what is new in the failing run or much
more frequent there. A line the good run never printed, near where the failing run stopped and with words that
read as a failure, is the likeliest to tell the cause.

Analysis only: it returns data (``TemplateDelta``), never text for a person.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from tpudoctor.logdiag import outcome
from tpudoctor.logs.prefixes import unwrapped

MAX_LINE_CHARS = 1000
MAX_LINES = 200_000
"""Of a longer log only its last lines are mined (about 60,000 lines a second): where a run ends says most."""
MORE_FREQUENT = 5.0
"""A template counts as "much more frequent" when its rate per line in the failing run is this many times the good
run's."""

# What varies between two runs of one job and says nothing about the failure: times, numbers, ids, addresses.
_MASKS = (
    (r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?", "TIME"),
    (r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+", "GLOG"),
    (r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b", "TIME"),
    (r"\b0x[0-9a-fA-F]+\b", "HEX"),
    (r"\b[0-9a-f]{12,}\b", "ID"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    (r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])", "NUM"),
)


@dataclasses.dataclass(frozen=True)
class TemplateDelta:
    """One template of the failing run: how often each run printed it, and the failing run's first line of it."""

    template: str
    failing_count: int
    good_count: int
    first_line: str
    first_line_no: int
    failure_words: str | None
    """The words of ``first_line`` that read as a failure (``outcome.failure_words``), if any."""
    exception_form: bool = False
    """``first_line`` is an exception line (``ValueError: ...``) or an error-level log line."""

    @property
    def new(self) -> bool:
        return self.good_count == 0


@dataclasses.dataclass(frozen=True)
class BaselineDiff:
    failing_lines: int
    good_lines: int
    templates_failing: int
    templates_good: int
    ranked: tuple[TemplateDelta, ...]
    """New templates and much more frequent ones, likeliest cause first."""

    def top(self, n: int = 3) -> tuple[TemplateDelta, ...]:
        return self.ranked[:n]


def _miner():
    from drain3 import TemplateMiner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.masking_instructions = [MaskingInstruction(pattern, name) for pattern, name in _MASKS]
    config.drain_sim_th = 0.5
    config.drain_depth = 4
    config.parametrize_numeric_tokens = True
    config.profiling_enabled = False
    return TemplateMiner(config=config)


def _message(line: str) -> str:
    """The part of a line that can repeat between runs: without launchers' prefixes and trailing space."""
    return unwrapped(line.rstrip("\r\n"))[:MAX_LINE_CHARS].strip()


def compare(failing: Iterable[str], good: Iterable[str], *, first_line_no: int = 1) -> BaselineDiff:
    """Templates new in ``failing`` (lines) or ``MORE_FREQUENT`` times as frequent as in ``good``, ranked."""
    miner = _miner()
    good_counts: dict[int, int] = {}
    good_lines = 0
    for line in good:
        message = _message(line)
        good_lines += 1
        if message:
            cluster = miner.add_log_message(message)["cluster_id"]
            good_counts[cluster] = good_counts.get(cluster, 0) + 1
    failing_counts: dict[int, int] = {}
    first: dict[int, tuple[str, int]] = {}
    failing_lines = 0
    for failing_lines, line in enumerate(failing, start=1):
        message = _message(line)
        if message:
            cluster = miner.add_log_message(message)["cluster_id"]
            failing_counts[cluster] = failing_counts.get(cluster, 0) + 1
            first.setdefault(cluster, (line.rstrip("\r\n")[:MAX_LINE_CHARS], failing_lines + first_line_no - 1))
    templates = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    deltas = []
    for cluster, count in failing_counts.items():
        before = good_counts.get(cluster, 0)
        rate_ratio = (count / max(failing_lines, 1)) / (before / max(good_lines, 1)) if before else float("inf")
        if before and rate_ratio < MORE_FREQUENT:
            continue
        line, line_no = first[cluster]
        form = _error_form(line)
        deltas.append(TemplateDelta(templates[cluster], count, before, line, line_no,
                                    outcome.failure_words(line) or form, form is not None))
    ranked = sorted(deltas, key=lambda d: _rank(d, failing_lines + first_line_no - 1))
    return BaselineDiff(failing_lines, good_lines, len(failing_counts), len(good_counts), tuple(ranked))


def _error_form(line: str) -> str | None:
    """The exception name of an exception line, or the level of an error-level log line; None otherwise."""
    from tpudoctor.logdiag.errorlevel import is_exception_line, line_level

    body = _message(line)
    if is_exception_line(body):
        return body.split(":", 1)[0]
    level = line_level(body)
    return level if level is not None and level.upper() in ("E", "F", "ERROR", "CRITICAL", "FATAL") else None


def _rank(delta: TemplateDelta, failing_lines: int) -> tuple:
    """New before more frequent; an exception line or error-level line first, then a line whose words read as a
    failure; then nearer the end of the failing run (where it stopped); then rarer (a cause is printed once, a
    symptom repeats)."""
    return (not delta.new, not delta.exception_form, delta.failure_words is None,
            failing_lines - delta.first_line_no, delta.failing_count)


def _tail(path: str | Path) -> tuple[list[str], int]:
    """The last ``MAX_LINES`` lines of a file, and how many lines it has."""
    import collections

    with open(path, encoding="utf-8", errors="replace") as handle:
        kept: collections.deque[str] = collections.deque(maxlen=MAX_LINES)
        total = 0
        for total, line in enumerate(handle, start=1):  # noqa: B007 (total is the count after the loop)
            kept.append(line)
    return list(kept), total


def compare_files(failing: str | Path, good: str | Path) -> BaselineDiff:
    """``compare`` of two log files; of a longer one, its last ``MAX_LINES`` lines."""
    bad, bad_total = _tail(failing)
    ok, _ = _tail(good)
    return compare(bad, ok, first_line_no=bad_total - len(bad) + 1)
