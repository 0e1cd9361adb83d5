"""Where the target and options come from: flags, then the environment, then a config file, then defaults.

Precedence follows gcloud, for every flag of every command: an explicit flag wins over the
environment (``CLOUDSDK_*``, ``TPU_NAME``, ``TPUDOCTOR_*``), which wins over ``tpudoctor.toml``
(or ``[tool.tpudoctor]`` in ``pyproject.toml``) in the working directory, which wins over the
built-in default. Flags therefore default to ``None`` ("not given"); ``resolve`` applies the
default last. On a TPU VM the metadata server fills what is still missing (see the node providers).

The target keys and ``format`` apply to every command that has the flag; the other keys are
those of ``check``.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpudoctor.errors import UsageError
from tpudoctor.formats import FORMAT_ENV

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ENV_FOR_SETTING = {
    "project": ("CLOUDSDK_CORE_PROJECT",),
    "zone": ("CLOUDSDK_COMPUTE_ZONE",),
    "tpu": ("TPU_NAME",),
    "worker": ("TPUDOCTOR_WORKER",),
    "format": (FORMAT_ENV,),
    "cluster": ("TPUDOCTOR_CLUSTER",),
}
ENV_FOR_TARGET = ENV_FOR_SETTING  # older name

KNOWN_KEYS = {
    "project", "zone", "tpu", "worker", "data", "checkpoint_dir", "log_dir", "log_file",
    "since", "timeout", "api_timeout", "reference_timeout", "format", "fail_on", "cluster",
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


def resolve(flag: Any, key: str, config: Mapping[str, Any], env: Mapping[str, str] | None = None,
            default: Any = None) -> Any:
    """One setting by precedence: flag, environment, config file, default.

    A flag is "not given" when it is ``None`` (or an empty list/string), never when it equals
    the default, so an explicit ``--timeout 600s`` still beats the config file.
    """
    if flag not in (None, [], ""):
        return flag
    environ = os.environ if env is None else env
    for var in ENV_FOR_SETTING.get(key, ()):
        if environ.get(var):
            return environ[var]
    value = config.get(key)
    return default if value in (None, [], "") else value


def origin(flag: Any, key: str, env: Mapping[str, str] | None = None) -> str:
    """Where ``resolve`` took a setting from, for messages: the flag, the environment variable, or the
    config file."""
    if flag not in (None, [], ""):
        return f"--{key.replace('_', '-')}"
    environ = os.environ if env is None else env
    for var in ENV_FOR_SETTING.get(key, ()):
        if environ.get(var):
            return var
    return "the config file"


def as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration_s(text: str | float | int) -> float:
    """``90``, ``90s``, ``15m``, ``1h``, ``2d`` -> seconds."""
    hint = "use a number with s, m, h or d, e.g. 30s, 15m, 1h"
    raw = str(text).strip().lower()
    try:
        if raw and raw[-1] in _DURATION_UNITS:
            seconds = float(raw[:-1]) * _DURATION_UNITS[raw[-1]]
        else:
            seconds = float(raw)
    except ValueError:
        raise UsageError(f"not a duration: {text!r}", hint=hint) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"not a usable duration: {text!r}", hint=hint)
    return seconds


def parse_percent(text: str | float) -> float:
    """``5%`` or ``5`` or ``0.05``? Only ``5%`` and ``5`` are accepted: both mean five percent."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1] if raw.endswith("%") else raw)
    except ValueError:
        raise UsageError(f"not a percentage: {text!r}", hint="write it like 5%") from None
    if not math.isfinite(value) or not 0 <= value < 100:
        raise UsageError(f"percentage out of range: {text!r}")
    return value
