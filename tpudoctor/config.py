"""The config file (``tpudoctor.toml`` or ``[tool.tpudoctor]`` in ``pyproject.toml``) and the value parsers
settings share (durations, percentages).

Which value wins (flag > environment > config file > default) is ``tpudoctor.settings``; only the command
line reads the config file, through it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from tpudoctor.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_KEYS = {
    "project", "zone", "tpu", "worker", "data", "checkpoint_dir", "log_dir", "log_file",
    "since", "timeout", "api_timeout", "reference_timeout", "format", "fail_on", "cluster", "disable_plugins",
}
ALL_FORMATS = ("text", "json", "markdown", "html", "junit")


def load_config_file(start: Path | None = None) -> tuple[dict[str, Any], Path | None]:
    """Read ``tpudoctor.toml`` or ``[tool.tpudoctor]`` from the working directory."""
    here = start or Path.cwd()
    for name, section in (("tpudoctor.toml", None), ("pyproject.toml", ("tool", "tpudoctor"))):
        path = here / name
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"cannot read config file {path}: {exc}") from exc
        if section:
            for part in section:
                data = data.get(part, {}) if isinstance(data, dict) else {}
            if not data:
                continue
        if not isinstance(data, dict):
            raise UsageError(f"config file {path}: expected a table of settings")
        unknown = sorted(set(data) - KNOWN_KEYS)
        if unknown:
            raise UsageError(
                f"config file {path}: unknown setting(s) {', '.join(unknown)}",
                hint=f"known settings: {', '.join(sorted(KNOWN_KEYS))}",
            )
        fmt = data.get("format")
        if fmt is not None and str(fmt).strip().lower() not in ALL_FORMATS:
            raise UsageError(f"config file {path}: format {fmt!r} is not one of {', '.join(ALL_FORMATS)}")
        return data, path
    return {}, None


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration_s(text: str | float | int, *, what: str | None = None) -> float:
    """``90``, ``90s``, ``15m``, ``1h``, ``2d`` -> seconds; ``what`` (the flag or key) starts the error."""
    hint = "use a number with s, m, h or d, e.g. 30s, 15m, 1h"
    named = f"{what}: " if what else ""
    raw = str(text).strip().lower()
    try:
        if raw and raw[-1] in _DURATION_UNITS:
            seconds = float(raw[:-1]) * _DURATION_UNITS[raw[-1]]
        else:
            seconds = float(raw)
    except ValueError:
        raise UsageError(f"{named}not a duration: {text!r}", hint=hint) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"{named}not a usable duration: {text!r}", hint=hint)
    return seconds


def parse_percent(text: str | float, *, flag: str | None = None, below: float | None = 100.0) -> float:
    """``5%`` or ``5`` (both five percent) -> 5.0; one ``%`` at most (``5%%`` is a typo, refused). ``below``: the
    exclusive upper bound (None: any finite value). ``flag`` names the flag in the error."""
    name = f"{flag}: " if flag else ""
    raw = str(text).strip()
    try:
        value = float(raw[:-1] if raw.endswith("%") else raw)
    except ValueError:
        raise UsageError(f"{name}not a percentage: {text!r}", hint="write it like 5%") from None
    if not math.isfinite(value) or value < 0 or (below is not None and value >= below):
        # nan compares false with everything: a nan threshold would turn a gate silently off
        raise UsageError(f"{name}percentage out of range: {text!r}"
                         + (f" (from 0 to below {below:g}%)" if below is not None else " (0 or more)"))
    return value


def parse_ratio(text: str | float, *, flag: str) -> float:
    """A ratio from 0 to 1, as ``0.9`` or as the same figure in percent, ``90%``: -> 0.9."""
    raw = str(text).strip()
    if raw.endswith("%"):
        value = parse_percent(raw, flag=flag, below=None) / 100.0
    else:
        try:
            value = float(raw)
        except ValueError:
            raise UsageError(f"{flag}: not a ratio: {text!r}", hint="write it like 0.9 or 90%") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise UsageError(f"{flag}: a ratio is from 0 to 1, e.g. 0.9 or 90% (got {text!r})")
    return value
