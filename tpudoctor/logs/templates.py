"""Step series by log-template mining: lines that share a template once their numbers are masked (the
simplest Drain: the numbers are the variable tokens) form a series; a template that recurs with an integer
field that grows line after line is a step line. Counts with k/M suffixes and progress bars (``94/6000``)
count too.

>>> series = step_series(["step 0 | elapsed 0.38m | loss: 4.01", "step 100 | elapsed 0.56m | loss: 3.87",
...                       "step 200 | elapsed 0.75m | loss: 3.88"])
>>> series.template, [s.step for s in series.points]
('step <*> | elapsed <*>m | loss: <*>', [0, 100, 200])
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

NUMBER = re.compile(r"(?<![A-Za-z_])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:[kKM](?![A-Za-z]))?")
SCALE = {"k": 1e3, "K": 1e3, "M": 1e6}
STEP_HINT = re.compile(r"(?:step|iter|iteration|update|updates|num_updates|batch|epoch|global_step|it)\W{0,3}$",
                       re.IGNORECASE)
TIME_HINT = re.compile(r"(?:elapsed|wall|time|t|eta|remaining|lr|loss|rate|pid|ip|rank|port|worker|device|node|"
                       r"process|host|gpu|tpu|xla|core|thread)\W{0,3}$", re.IGNORECASE)
STEP_RATE = re.compile(r"\bsteps?(?:_per_|/)s(?:ec(?:ond)?)?\b|\b(?:sec|s)/(?:step|it)\b|\bit/s\b", re.IGNORECASE)
"""A line that reports its rate in steps (``steps_per_second=1.58``, ``0.175 sec/step``, ``9.17s/it``) is a step
summary: its growing integer is the step even where no step word stands before it (clu's ``[400]``)."""
DURATION_HINT = re.compile(r"(?:step_time|time|seconds|sec|dt|duration)\W{0,3}$", re.IGNORECASE)
LOSS_WORD = re.compile(r"\bloss\b", re.IGNORECASE)
EVAL_WORDS = re.compile(r"\b(?:eval\w*|valid\w*|test\w*)\b", re.IGNORECASE)
MIN_LINES = 2


def value(text: str) -> float:
    if text[-1] in SCALE:
        return float(text[:-1]) * SCALE[text[-1]]
    return float(text)


# not frozen: a frozen dataclass's __init__ takes twice as long, and a long log makes one a step line
@dataclasses.dataclass(slots=True)
class Point:
    index: int
    """The line's position among the lines given."""
    step: int
    approx: bool
    seconds: float | None
    """A per-step (or per-line) duration the line prints."""


@dataclasses.dataclass
class Series:
    template: str
    field: int
    points: list[Point]
    duration_field: int | None
    why: str


_NUMBERS_BETWEEN = re.compile(f"({NUMBER.pattern})")


def template_of(message: str) -> tuple[str, list[str]]:
    """The line with its numbers masked, and the numbers (one regex pass: the text between numbers, then each
    number)."""
    parts = _NUMBERS_BETWEEN.split(message)
    return "<*>".join(parts[0::2]), parts[1::2]


def step_series(messages: Iterable[str]) -> Series | None:
    """The step series of lines (their clocks and prefixes already taken off), or None when no template recurs with
    a growing integer field."""
    groups: dict[str, list[tuple[int, list[str]]]] = {}
    for i, message in enumerate(messages):
        key, values = template_of(" ".join(message.split()))
        if values:
            groups.setdefault(key, []).append((i, values))
    best: tuple[tuple, Series] | None = None
    for key, rows in groups.items():
        if len(rows) < MIN_LINES:
            continue
        sample_text = key
        for f in range(len(rows[0][1])):
            try:
                column = [r[1][f] for r in rows]
                if len(set(column)) < 2:
                    continue  # the same text on every line: no growing field (the test below, without reading it)
                nums = [value(v) for v in column]
            except (ValueError, IndexError):
                continue
            if any(n != int(n) for n in nums) and not any(r[1][f][-1] in SCALE for r in rows):
                continue
            pairs = list(zip(nums, nums[1:], strict=False))
            back = sum(b < a for a, b in pairs)
            if len(set(nums)) < 2 or nums[-1] <= nums[0] or back > max(1, len(pairs) // 10):
                continue  # a step may go back at a relaunch, not often
            before = _before_field(sample_text, f)
            if TIME_HINT.search(before) and not STEP_HINT.search(before):
                continue
            hint = bool(STEP_HINT.search(before)) or bool(STEP_RATE.search(key))
            if not hint and len(set(nums)) < 3:
                continue
            evalish = bool(EVAL_WORDS.search(key))
            duration = _duration_field(key, len(rows[0][1]), f)
            # a training step line reports a loss and is printed once per step (a data or runtime line that
            # names the step is printed several times per step, or carries no loss)
            loss = bool(LOSS_WORD.search(key))
            score = (not evalish, hint, loss, len(set(nums)) / len(nums) > 0.5, len(set(nums)), duration is not None, -f)
            points = [Point(i, int(n), rows[k][1][f][-1] in SCALE,
                            value(rows[k][1][duration]) if duration is not None else None)
                      for k, (n, (i, _)) in enumerate(zip(nums, rows, strict=True))]
            why = (f"the template '{key[:120]}' recurs {len(rows)} times with field {f + 1} growing "
                   f"{int(nums[0])} -> {int(nums[-1])}" + (" after a step word" if hint else ""))
            if best is None or score > best[0]:
                best = (score, Series(key, f, points, duration, why))
    return best[1] if best is not None else None


def _before_field(template: str, field: int) -> str:
    parts = template.split("<*>")
    return parts[field][-24:] if field < len(parts) else ""


def _duration_field(template: str, count: int, step_field: int) -> int | None:
    parts = template.split("<*>")
    for f in range(count):
        if f == step_field:
            continue
        before, after = parts[f][-24:], parts[f + 1][:8] if f + 1 < len(parts) else ""
        if DURATION_HINT.search(before) and not re.search(r"(?:elapsed|wall)\W{0,3}$", before, re.IGNORECASE):
            return f
        if re.match(r"\s?s/(?:step|it)\b", after):
            return f
    return None


def points_of(series: Series, indexed_messages: Iterable[tuple[int, str]]) -> Series:
    """The series' points among ``(index, message)`` pairs: the messages of its template, its step field read."""
    points = []
    for index, message in indexed_messages:
        key, values = template_of(" ".join(message.split()))
        if key != series.template:
            continue
        try:
            step = value(values[series.field])
        except (ValueError, IndexError):
            continue
        seconds = value(values[series.duration_field]) if series.duration_field is not None else None
        points.append(Point(index, int(step), values[series.field][-1] in SCALE, seconds))
    return dataclasses.replace(series, points=points)


def matcher(series: Series, *, within_rows: bool = False) -> re.Pattern[str]:
    """A regex that finds the series' template in a raw line (clock masks match anything, runs of spaces any
    spacing): the fast way through a long log once the template is known. ``within_rows``: the same fields on
    lines joined by newlines, none reaching across one (a run of spaces never takes a newline), and no leading
    ``.*?`` (a search finds the same first match without it, and does not scan the rest of each row from every
    byte)."""
    out = []
    pieces = [piece for piece in re.split(r"(<\*>|<T>|\s+)", series.template) if piece]
    if within_rows and pieces[:1] == ["<T>"]:
        pieces = pieces[1:]
    for piece in pieces:
        if piece == "<*>":
            out.append(f"({NUMBER.pattern})")
        elif piece == "<T>":
            out.append(".*?")
        elif piece and piece.isspace():
            out.append(r"[^\S\n]+" if within_rows else r"\s+")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out))


def points_by_matcher(series: Series, pattern: re.Pattern, indexed_lines: Iterable[tuple[int, Any]], *,
                      head: Iterable[Point] = (), matched: bool = False) -> Series:
    """The series' points among raw lines, read with ``matcher(series)``, after the ``head`` points already read
    (``matched``: the pairs are ``(index, match)``, the regex already run)."""
    points = list(head)
    for index, line in indexed_lines:
        m = line if matched else pattern.search(line)
        if m is None:
            continue
        try:
            field = _text(m.group(series.field + 1))
            step = value(field)
            seconds = value(_text(m.group(series.duration_field + 1))) if series.duration_field is not None else None
        except (ValueError, IndexError, TypeError):
            continue
        points.append(Point(index, int(step), field[-1] in SCALE, seconds))
    return dataclasses.replace(series, points=points)


def points_of_fields(series: Series, rows: list[int], steps: list[bytes], durations: list[bytes] | None, *,
                     head: Iterable[Point] = ()) -> Series:
    """The series' points from its fields already cut out of each row (``points_by_matcher``'s reading, a
    column at a time: plain numbers are converted at once, a k/M count as ``value`` reads it)."""
    scaled = _scaled(steps)
    approx = [s.endswith(_SCALE_BYTES) for s in steps] if scaled else [False] * len(steps)
    step_values = [int(value(_text(s))) for s in steps] if scaled else list(map(int, map(float, steps)))
    seconds: list[float] | list[None] = [None] * len(steps) if durations is None else \
        [value(_text(s)) for s in durations] if _scaled(durations) else list(map(float, durations))
    points = list(head)
    points.extend(map(Point, rows, step_values, approx, seconds))
    return dataclasses.replace(series, points=points)


_SCALE_BYTES = tuple(k.encode() for k in SCALE)


def _scaled(fields: list[bytes]) -> bool:
    """Whether any field ends in a k/M suffix (one search of the fields joined, not a test a field)."""
    joined = b"\n".join(fields) + b"\n"
    return any(k + b"\n" in joined for k in _SCALE_BYTES)


def _text(group: str | bytes) -> str:
    return group.decode("ascii", errors="replace") if isinstance(group, bytes) else group
