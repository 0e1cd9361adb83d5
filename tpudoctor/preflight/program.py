"""The program a preflight compiles: ``FILE.py:FACTORY``, whose ``FACTORY(mesh, **knobs)`` returns ``(step, args)``.

``step`` is a function (jitted or not); ``args`` its arguments, pytrees of ``jax.ShapeDtypeStruct`` (with
shardings on the mesh) or arrays (made abstract here, replicated on the mesh where they carry no mesh sharding).

A factory's knobs are its keyword arguments. The values a preflight tries come from the factory's own
``preflight_knobs`` attribute (``{"batch_size": [8, 4], "remat": [True]}``), the caller's, or, for a knob with
neither, its default: an int over 1 is halved, a bool flipped, a ``float32`` dtype name made ``bfloat16``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from tpudoctor.errors import InputError, UsageError

KNOBS_ATTRIBUTE = "preflight_knobs"


@dataclasses.dataclass(frozen=True)
class KnobChange:
    """One knob set to one value (the factory's default otherwise)."""

    name: str
    value: Any
    default: Any

    @property
    def label(self) -> str:
        return f"{self.name}={self.value!r} (was {self.default!r})"


def load_factory(spec: str) -> Callable[..., Any]:
    """``path/to/file.py:FACTORY`` -> the factory; ``UsageError`` / ``InputError`` saying what is wrong."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name.isidentifier():
        raise UsageError(f"--program {spec!r} is not FILE.py:FACTORY", hint="tpudoctor memory --topology v5e:2x2 "
                                                                              "--program train.py:make_step")
    if not os.path.isfile(path):
        raise InputError(f"--program: no file {path!r}")
    module_name = f"tpudoctor_preflight_{abs(hash(os.path.abspath(path)))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise InputError(f"--program: {path!r} is not a Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's program failed to import: their error, exit 2
        raise InputError(f"--program: importing {path} failed: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise InputError(f"--program: {path} has no function {name!r}")
    return factory


def knob_defaults(factory: Callable[..., Any]) -> dict[str, Any]:
    """The factory's keyword arguments and their defaults (every parameter after the mesh)."""
    out: dict[str, Any] = {}
    for i, param in enumerate(inspect.signature(factory).parameters.values()):
        if i == 0 or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        out[param.name] = None if param.default is param.empty else param.default
    return out


def knob_changes(factory: Callable[..., Any], given: Mapping[str, list[Any]] | None = None) -> list[KnobChange]:
    """The knob settings to try, one knob at a time: the caller's values and the factory's ``preflight_knobs``
    where either names some (those knobs only), else a value from each knob's default (``KnobChange``)."""
    defaults = knob_defaults(factory)
    declared = dict(getattr(factory, KNOBS_ATTRIBUTE, None) or {})
    declared.update(given or {})
    unknown = sorted(set(declared) - set(defaults))
    if unknown:
        raise UsageError(f"--knob {', '.join(unknown)}: the factory takes no such keyword argument",
                         hint=f"its knobs: {', '.join(defaults) or 'none'}")
    changes: list[KnobChange] = []
    for name, default in defaults.items():
        values = declared.get(name) if declared else _derived(default)
        changes.extend(KnobChange(name, v, default) for v in values or () if v != default)
    return changes


def _derived(default: Any) -> list[Any]:
    if isinstance(default, bool):
        return [not default]
    if isinstance(default, int) and default > 1:
        return [default // 2]
    if isinstance(default, str) and default in ("float32", "f32"):
        return ["bfloat16"]
    return []


def parse_knob_values(items: list[str] | None) -> dict[str, list[Any]]:
    """``["batch_size=8,4", "remat=true"]`` -> {"batch_size": [8, 4], "remat": [True]}; ValueError otherwise."""
    out: dict[str, list[Any]] = {}
    for item in items or ():
        name, sep, values = item.partition("=")
        if not sep or not name.strip().isidentifier() or not values.strip():
            raise ValueError(f"{item!r} is not NAME=VALUE[,VALUE...] (e.g. batch_size=8,4)")
        out[name.strip()] = [_value(v.strip()) for v in values.split(",") if v.strip()]
    return out


def _value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def abstract_args(args: Any, mesh) -> tuple:
    """``args`` as ShapeDtypeStructs: arrays (or structs without a mesh sharding) replicated on ``mesh``."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    def leaf(x):
        sharding = getattr(x, "sharding", None)
        if not isinstance(sharding, NamedSharding) or sharding.mesh.devices.size != mesh.devices.size:
            sharding = NamedSharding(mesh, PartitionSpec())
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)

    if not isinstance(args, (tuple, list)):
        raise InputError("the factory must return (step, args): args a tuple of the step's arguments")
    return tuple(jax.tree_util.tree_map(leaf, a) for a in args)
