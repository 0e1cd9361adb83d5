"""The step-line grammar: which lines say a training step (or a progress counter) moved, read from
``step_forms.toml`` (the frameworks' forms are data; this module only applies them).

>>> match = match_step("I0811 21:54:55.531340 1 metric_logger.py:226] completed step: 1, seconds: 0.631, loss: 12.9")
>>> match.framework, match.step, match.seconds
('maxtext', 1, 0.631)

goodput's timeline counts the ``step`` forms; hang reads ``step`` and ``progress`` forms alike.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from functools import cache
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FORMS_FILE = "step_forms.toml"
KINDS = ("step", "progress")


@dataclasses.dataclass(frozen=True)
class StepForm:
    framework: str
    kind: str
    keyword: str
    regex: re.Pattern[str]
    unless: re.Pattern[str] | None
    examples: tuple[str, ...]
    expect: tuple[float, ...]

    def match(self, line: str) -> re.Match[str] | None:
        if self.keyword not in line:
            return None
        m = self.regex.search(line)
        if m is None or (self.unless is not None and self.unless.search(line)):
            return None
        return m


@dataclasses.dataclass(frozen=True)
class StepMatch:
    """What one step line says, the same for every reader."""

    form: StepForm
    groups: dict[str, Any]

    @property
    def framework(self) -> str:
        return self.form.framework

    @property
    def step(self) -> int | None:
        if self.groups.get("step"):
            return int(self.groups["step"])
        if self.groups.get("approx_step"):
            return approx_int(self.groups["approx_step"])
        return None

    @property
    def approx(self) -> bool:
        return bool(self.groups.get("approx_step"))

    @property
    def epoch_fraction(self) -> float | None:
        value = self.groups.get("epoch_fraction")
        return float(value) if value else None

    @property
    def progress(self) -> float | None:
        """The counter a person would watch: the step, else the epoch fraction."""
        step = self.step
        return float(step) if step is not None else self.epoch_fraction

    @property
    def seconds(self) -> float | None:
        value = self.groups.get("seconds")
        return float(value) if value else None

    @property
    def device(self) -> str | None:
        return self.groups.get("device")


class StepFormsError(ValueError):
    """``step_forms.toml`` is malformed (a bug in the package)."""


def parse_forms(text: str) -> tuple[StepForm, ...]:
    forms = []
    for i, raw in enumerate(tomllib.loads(text).get("form", [])):
        where = f"step form {i + 1} ({raw.get('framework')!r})"
        for key in ("framework", "kind", "keyword", "pattern", "examples", "expect"):
            if key not in raw:
                raise StepFormsError(f"{where}: missing '{key}'")
        if raw["kind"] not in KINDS:
            raise StepFormsError(f"{where}: kind must be one of {KINDS}")
        if len(raw["examples"]) != len(raw["expect"]):
            raise StepFormsError(f"{where}: one expected value per example")
        try:
            regex = re.compile(raw["pattern"])
            unless = re.compile(raw["unless"]) if raw.get("unless") else None
        except re.error as exc:
            raise StepFormsError(f"{where}: bad regex: {exc}") from None
        forms.append(StepForm(raw["framework"], raw["kind"], raw["keyword"], regex, unless,
                              tuple(raw["examples"]), tuple(float(v) for v in raw["expect"])))
    return tuple(forms)


@cache
def load_forms() -> tuple[StepForm, ...]:
    return parse_forms(resources.files(__package__).joinpath(FORMS_FILE).read_text(encoding="utf-8"))


def forms_of(framework: str) -> tuple[StepForm, ...]:
    return tuple(f for f in load_forms() if f.framework == framework)


def match_step(line: str, *, kinds: tuple[str, ...] = KINDS) -> StepMatch | None:
    """The first form that reads ``line`` as a step (or progress) line, or None."""
    for form in load_forms():
        if form.kind in kinds:
            m = form.match(line)
            if m is not None:
                return StepMatch(form, m.groupdict())
    return None


def approx_int(text: str) -> int | None:
    """``9.48k`` to 9480."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1.0)
    try:
        return int(round(float(text.rstrip("kMG")) * scale))
    except ValueError:
        return None
