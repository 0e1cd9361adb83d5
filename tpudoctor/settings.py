"""The run's settings, resolved once by the command line: flag, then environment, then config file, then default.

Precedence follows gcloud, for every flag of every command: an explicit flag (even one equal to the default)
wins over the environment (``CLOUDSDK_*``, ``TPU_NAME``, ``TPUDOCTOR_*``), which wins over ``tpudoctor.toml``
(or ``[tool.tpudoctor]`` in ``pyproject.toml``) in the working directory, which wins over the command's own
default. Each command declares the keys it takes and their defaults (``SettingsSpec``); ``tpudoctor.cli``
builds one frozen ``Settings`` from them and hands it to the command. Nothing else reads the config file or
these environment variables. On a TPU VM the metadata server fills what is still missing: that is a fact
(``tpu.target``), not a setting.

A pod fan-out passes the settings to each worker's ``tpudoctor`` on its command line (``Settings.worker_argv``,
through ``to_argv``): the worker runs in its own folder, without our config file or our environment.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from tpudoctor.errors import UsageError
from tpudoctor.formats import FORMAT_ENV
from tpudoctor.plugins import DISABLE_ENV, DISABLE_FLAG

ENV_FOR_SETTING = {
    "project": ("CLOUDSDK_CORE_PROJECT",),
    "zone": ("CLOUDSDK_COMPUTE_ZONE",),
    "tpu": ("TPU_NAME",),
    "worker": ("TPUDOCTOR_WORKER",),
    "format": (FORMAT_ENV,),
    "cluster": ("TPUDOCTOR_CLUSTER",),
    "disable_plugins": (DISABLE_ENV,),
}
TARGET_KEYS = ("project", "zone", "tpu", "worker")
LIST_KEYS = ("data", "checkpoint_dir", "log_dir", "log_file")
DURATION_KEYS = ("since", "timeout", "api_timeout", "reference_timeout")
OTHER_KEYS = ("format", "fail_on", "cluster")
NAME_LIST_KEYS = ("disable_plugins",)
"""Lists of names: a flag given again adds names, and any value may be comma-separated (``a,b``)."""
ALL_KEYS = TARGET_KEYS + LIST_KEYS + DURATION_KEYS + OTHER_KEYS + NAME_LIST_KEYS
FLAG_FOR_SETTING = {"disable_plugins": DISABLE_FLAG}
"""A key whose flag is not ``--`` and the key with dashes (the flag takes one name at a time)."""
FAIL_LEVELS = ("warn", "fail")

FLAG, CONFIG, DEFAULT = "flag", "config", "default"
"""Where a value came from; an environment variable is named by itself (``CLOUDSDK_CORE_PROJECT``)."""

SettingsSpec = Mapping[str, Any]
"""A command's keys and its defaults, e.g. ``{"project": None, "since": "1h"}``."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a command was asked to do, every value resolved and checked; None where nothing said."""

    project: str | None = None
    zone: str | None = None
    tpu: str | None = None
    worker: str | None = None
    data: tuple[str, ...] = ()
    checkpoint_dir: tuple[str, ...] = ()
    log_dir: tuple[str, ...] = ()
    log_file: tuple[str, ...] = ()
    since_s: float | None = None
    timeout_s: float | None = None
    api_timeout_s: float | None = None
    reference_timeout_s: float | None = None
    format: str | None = None
    """The format asked for, before a command narrows it to those it has (``format_for``)."""
    fail_on: str | None = None
    cluster: str | None = None
    disable_plugins: tuple[str, ...] = ()
    """Plugins to leave out (entry-point name, distribution, or ``distribution:name``), for every loader."""
    keys: tuple[str, ...] = ()
    """The keys this command takes: the ones ``to_argv`` passes on."""
    sources: tuple[tuple[str, str], ...] = ()
    """``(key, where)``: ``flag``, the environment variable's name, ``config`` or ``default``."""
    endpoints: Any = None
    """Where each Google API is and where credentials come from (``tpudoctor.gcp.session.Endpoints``)."""

    # --- building ---------------------------------------------------------------------------------
    @classmethod
    def resolve(cls, args: argparse.Namespace | Mapping[str, Any], spec: SettingsSpec, *,
                environ: Mapping[str, str] | None = None, config: Mapping[str, Any] | None = None) -> Settings:
        """The keys of ``spec`` from ``args`` (flags; None or empty means "not given"), ``environ``, ``config``
        and ``spec``'s defaults; a usage error (exit 2) naming where a bad value came from."""
        from tpudoctor.resource_names import check_resource_name

        flags = args if isinstance(args, Mapping) else vars(args)
        environ = os.environ if environ is None else environ
        config = config or {}
        values: dict[str, Any] = {}
        sources: list[tuple[str, str]] = []
        for key in spec:
            if key not in ALL_KEYS:
                raise ValueError(f"unknown setting {key!r}")
            raw, where = _pick(flags.get(key), key, environ, config, spec[key])
            sources.append((key, where))
            origin = _origin_text(key, where)
            if key in TARGET_KEYS:
                value = None if raw is None else str(raw)
                values[key] = check_resource_name(key, value, origin=origin)
            elif key in LIST_KEYS:
                values[key] = tuple(as_list(raw))
            elif key in DURATION_KEYS:
                from tpudoctor.config import parse_duration_s

                values[f"{key}_s"] = None if raw is None else parse_duration_s(
                    raw, what=origin if where == FLAG else f"{key} in {origin}")
            elif key == "format":
                values[key] = None if raw is None else str(raw).strip().lower()
                from tpudoctor.config import ALL_FORMATS

                if where == FORMAT_ENV and values[key] not in ALL_FORMATS:  # as the config file's format is
                    raise UsageError(f"{FORMAT_ENV}={raw!r} is not a report format",
                                     hint=f"one of {', '.join(ALL_FORMATS)}, or unset {FORMAT_ENV}")
            elif key == "fail_on":
                if raw is not None and raw not in FAIL_LEVELS:
                    raise UsageError(f"fail_on = {raw!r} in the config file: use \"warn\" or \"fail\"")
                values[key] = raw
            elif key == "cluster":
                if raw is not None and not isinstance(raw, str):
                    raise UsageError(f"config setting cluster must be a scheduler address string, got {raw!r}",
                                     hint='write it like cluster = "tcp://10.0.0.2:8786"')
                values[key] = _cluster_address(raw, origin) if raw else None
            elif key in NAME_LIST_KEYS:
                values[key] = _names(raw, key, origin)
        from tpudoctor.gcp.session import Endpoints

        return cls(**values, keys=tuple(spec), sources=tuple(sources), endpoints=Endpoints.from_environ(environ))

    # --- reading ----------------------------------------------------------------------------------
    def source(self, key: str) -> str | None:
        """Where ``key`` came from: ``flag``, an environment variable's name, ``config`` or ``default``."""
        return dict(self.sources).get(key)

    def origin(self, key: str) -> str:
        """Where ``key`` came from, for messages: ``--zone``, ``CLOUDSDK_COMPUTE_ZONE`` or the config file."""
        return _origin_text(key, self.source(key) or DEFAULT)

    def format_for(self, formats: Sequence[str]) -> str:
        """The format asked for where this command has it, else text (``html`` from the config file for
        ``bench``)."""
        asked = self.format
        return asked if asked is not None and asked in formats else "text"

    def target(self):
        """The gcloud-style target as given (flags, environment, config file); the metadata server's additions
        are the ``tpu.target`` fact."""
        from tpudoctor.findings import Target

        return Target(project=self.project, zone=self.zone, tpu=self.tpu, worker=self.worker)

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` given as flags (a worker's own format, limit and number)."""
        sources = dict(self.sources)
        for key in changes:
            sources[key.removesuffix("_s") if key.removesuffix("_s") in DURATION_KEYS else key] = FLAG
        return dataclasses.replace(self, **changes, sources=tuple(sources.items()))

    def worker_argv(self, command: str | Sequence[str], *, keys: Collection[str] | None = None,
                    args: argparse.Namespace | Mapping[str, Any] | None = None, flags: Sequence[str] = (),
                    positional: Sequence[str] = (), **changes: Any) -> list[str]:
        """The ``tpudoctor COMMAND ...`` a worker of a pod fan-out runs (``tpudoctor.pod.FanOut``): the one place a
        worker's command line is written.

        These settings through ``to_argv`` (the worker has neither our config file nor our environment), with
        ``changes`` given as flags (the worker's own number, format and limit), only the ``keys`` the worker
        takes where given; then the command's own behaviour flags named in ``flags`` as ``args`` holds them
        (``passed_flags``); then ``positional``."""
        mine = self.replace(**changes) if changes else self
        if keys is not None:
            unknown = set(keys) - set(self.keys)
            if unknown:
                raise ValueError(f"{sorted(unknown)}: not settings of this command ({', '.join(self.keys)})")
            changed = {key.removesuffix("_s") if key.removesuffix("_s") in DURATION_KEYS else key for key in changes}
            if changed - set(keys):
                raise ValueError(f"{sorted(changed - set(keys))}: changed, but not among the worker's keys")
            mine = dataclasses.replace(mine, keys=tuple(key for key in self.keys if key in keys))
        words = [command] if isinstance(command, str) else list(command)
        return ["tpudoctor", *words, *to_argv(mine), *passed_flags(args, flags), *positional]


def to_argv(settings: Settings) -> list[str]:
    """The command-line flags that make a ``tpudoctor`` elsewhere resolve the same settings (``tpudoctor.cli.settings_from_argv``).

    Every value is passed as ``--flag=value`` so that one starting with ``-`` stays a value; durations are
    passed in seconds, exactly (``90s``, ``0.1s``, ``1234567.5s``). Keys that are None are left out: the
    worker's own environment and defaults decide them, as they would for ``tpudoctor`` started there."""
    argv: list[str] = []
    for key in settings.keys:
        flag = flag_for(key)
        if key in LIST_KEYS or key in NAME_LIST_KEYS:
            argv += [f"{flag}={value}" for value in getattr(settings, key)]
        elif key in DURATION_KEYS:
            seconds = getattr(settings, f"{key}_s")
            if seconds is not None:
                argv.append(f"{flag}={_seconds_text(seconds)}")
        else:
            value = getattr(settings, key)
            if value is not None:
                argv.append(f"{flag}={value}")
    return argv


def passed_flags(args: argparse.Namespace | Mapping[str, Any] | None, flags: Sequence[str]) -> list[str]:
    """A command's own flags (not settings) as ``args`` holds them, for a worker's command line: ``--flag=value``
    (a value that starts with ``-`` stays a value), a list once per item, a switch that is on bare, one that is
    off or unset left out. A flag whose value ``args`` lacks is a programming error."""
    values = args if isinstance(args, Mapping) else vars(args) if args is not None else {}
    argv: list[str] = []
    for flag in flags:
        dest = flag.lstrip("-").replace("-", "_")
        if dest not in values:
            raise ValueError(f"{flag}: not a flag of this command (no {dest!r} in its arguments)")
        value = values[dest]
        if value is True:
            argv.append(flag)
        elif value is None or value is False:
            continue
        elif isinstance(value, (list, tuple)):
            argv += [f"{flag}={item}" for item in value]
        else:
            argv.append(f"{flag}={value}")
    return argv


def _seconds_text(seconds: float) -> str:
    short = f"{seconds:g}"
    return f"{short if float(short) == seconds else repr(float(seconds))}s"


def _pick(flag: Any, key: str, environ: Mapping[str, str], config: Mapping[str, Any],
          default: Any) -> tuple[Any, str]:
    if flag not in (None, [], ""):
        return flag, FLAG
    for var in ENV_FOR_SETTING.get(key, ()):
        if environ.get(var):
            return environ[var], var
    value = config.get(key)
    if value not in (None, [], ""):
        return value, CONFIG
    return default, DEFAULT


def flag_for(key: str) -> str:
    """The flag that gives ``key`` on the command line: ``--api-timeout``, ``--disable-plugin``."""
    return FLAG_FOR_SETTING.get(key) or "--" + key.replace("_", "-")


def _names(raw: Any, key: str, origin: str) -> tuple[str, ...]:
    """``["a,b", "c"]`` or ``"a, b"`` -> ``("a", "b", "c")``: stripped, empty parts dropped, each name once."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise UsageError(f"{key} from {origin} must be a list of plugin names, got {raw!r}",
                         hint=f'write it like {key} = ["acme", "other-dist:rules"]')
    names = (name.strip() for item in items for name in item.split(","))
    return tuple(dict.fromkeys(name for name in names if name))


_CLUSTER_ADDRESS = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>\d{1,5})/?$")


def _cluster_address(raw: str, origin: str) -> str:
    """A Dask scheduler address has a host and a port (Dask itself fails late, with a bare ValueError, on
    ``bogus``); the scheme is checked where Dask is imported (``tpudoctor.profile.cluster``)."""
    address = raw.strip()
    match = _CLUSTER_ADDRESS.match(address)
    if match is None or not 0 < int(match["port"]) < 65536:
        given = f"cluster = {raw!r} in the config file" if origin == "the config file" else f"{origin} {raw!r}"
        raise UsageError(f"{given}: not a Dask scheduler address (it needs a host and a port)",
                         hint="write it like tcp://10.0.0.2:8786")
    return address


def _origin_text(key: str, where: str) -> str:
    if where == FLAG:
        return flag_for(key)
    if where in (CONFIG, DEFAULT):
        return "the config file"
    return where


def as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]
