"""Compiling a program for a TPU topology on any host with the real TPU compiler (libtpu), and what it says.

``jax.experimental.topologies.get_topology_desc("v5e:2x2", "tpu")`` gives the topology's devices without a TPU;
``jax.jit(step).lower(*args).compile(compiler_options=...)`` compiles for them. The compile dumps the optimised
module with its buffer assignment (``*.after_optimizations.hlo.pb``, an ``xla.HloProto``, written also when the
program does not fit), which ``tpudoctor.captures.hlo`` reads. A program that does not fit fails with
``RESOURCE_EXHAUSTED: Ran out of memory on HBM, ... exceeds available HBM (15.75G)``: the capacity the compiler
allows is read from that text (``hbm_limit_bytes`` probes it once per device kind).
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from tpudoctor.captures.buffer_plan import ProgramPlan

INSTALL_HINT = 'pip install "tpudoctor[tpu-compile]" (it brings jax[tpu] and libtpu, the TPU compiler)'


QUIET_ENV = {
    # libtpu looks for a TPU host's metadata at load; compiling for a topology needs none of it
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_WORKER_HOSTNAMES": "localhost",
    # libtpu takes /tmp/libtpu_lockfile: a second process (another preflight, a training job on a TPU host) would
    # fail with "Internal error when accessing libtpu multi-process lockfile"; compiling touches no chip
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
    "TPU_STDERR_LOG_LEVEL": "3",
    "TPU_MIN_LOG_LEVEL": "1",
    "GRPC_VERBOSITY": "ERROR",
}


class CompilerUnavailable(RuntimeError):
    """libtpu (or a JAX that can use it) is not installed: the preflight is skipped, saying what to install."""


def compiler_missing() -> str | None:
    """Why the TPU compiler cannot run here (what to install), or None when it can."""
    if importlib.util.find_spec("jax") is None:
        return f"JAX is not installed: {INSTALL_HINT}"
    if importlib.util.find_spec("libtpu") is None:
        return f"libtpu (the TPU compiler) is not installed: {INSTALL_HINT}"
    return None


def prepare_environment(log_dir: str | None = None) -> None:
    """Before JAX loads: run JAX on the CPU (the TPU is only compiled for), quiet libtpu's host probing, and put
    libtpu's own log (its out-of-memory report) in ``log_dir``. Settings the user made are kept."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if log_dir:
        os.environ.setdefault("TPU_LOG_DIR", log_dir)


@dataclasses.dataclass(frozen=True)
class OutOfMemory:
    """What the compiler's out-of-memory text says, read by the one OOM grammar (``tpudoctor.logs.oom``)."""

    memory_space: str
    """``hbm``, ``vmem`` (a kernel's scoped memory)...; empty where the text is no out-of-memory report."""
    required_bytes: int | None = None
    available_bytes: int | None = None


def read_out_of_memory(error: str) -> OutOfMemory:
    """The memory space a compile error ran out of, and, for HBM, what it needs and what the chip has for it:
    JAX's ``Ran out of memory on HBM, the total memory required for HLO temporaries (X) exceeds available HBM
    (Y)`` and libtpu's ``Ran out of memory in memory space hbm. Used X of Y hbm.`` alike."""
    from tpudoctor.logs.oom import parse_oom_reports

    headers = [r.header for r in parse_oom_reports(error) if r.header is not None] if error else []
    if not headers:
        return OutOfMemory("")
    header = next((h for h in headers if h.used_bytes is not None), headers[0])
    space = header.memory_space.lower()
    if space != "hbm":  # a kernel's scoped memory: its figures are not the program's HBM
        return OutOfMemory(space)
    return OutOfMemory(space, header.used_bytes, header.capacity_bytes)


@dataclasses.dataclass
class Compiled:
    """One compile for a topology: whether it fits, the compiler's figures, its buffer plan."""

    fits: bool
    stats: dict[str, int]
    """memory_analysis()'s ``*_in_bytes`` fields (empty when the compile failed)."""
    plan: ProgramPlan | None
    """The buffer assignment (dumped also when the program does not fit)."""
    seconds: float
    error: str = ""
    """The compiler's text where the compile failed."""
    required_bytes: int | None = None
    """What the out-of-memory text says the program needs."""
    available_bytes: int | None = None
    """What the out-of-memory text says the chip has for it."""
    effort: str = "default"
    memory_space: str = ""
    """Where the compiler ran out of memory: ``hbm``, or ``vmem`` (a kernel's scoped memory) and the like."""

    @property
    def total_bytes(self) -> int | None:
        """The program's peak as the compiler judges fit: memory_analysis's ``peak_memory_in_bytes`` (its
        ``temp_size_in_bytes`` counts more than the heap's peak on TPU: 4.36 GB for 3.86 in a scan), else argument +
        output + temp - alias; the buffer plan's where the compile failed. Generated code is apart."""
        if self.stats.get("peak_memory_in_bytes"):
            return self.stats["peak_memory_in_bytes"]
        if self.stats:
            s = self.stats
            return (s["argument_size_in_bytes"] + s["output_size_in_bytes"] + s["temp_size_in_bytes"]
                    - s["alias_size_in_bytes"])
        if self.plan is not None:
            return self.plan.peak_bytes
        return self.required_bytes

    @property
    def out_of_memory(self) -> bool:
        return not self.fits and bool(self.memory_space)


def topology_devices(topology: str) -> list[Any]:
    """The devices of a TPU topology (``v5e:2x2``, ``v4:2x2x1``), compiled for from this host."""
    from jax.experimental import topologies

    return list(topologies.get_topology_desc(topology, "tpu").devices)


def build_mesh(devices: list[Any], axes: Mapping[str, int] | None):
    """A ``jax.sharding.Mesh`` over ``devices``: ``axes`` (name -> size, product = device count) or one ``data``
    axis over all of them."""
    import numpy as np
    from jax.sharding import Mesh

    axes = dict(axes or {"data": len(devices)})
    sizes = tuple(axes.values())
    if int(np.prod(sizes)) != len(devices):
        raise ValueError(f"mesh {axes} has {int(np.prod(sizes))} devices, the topology {len(devices)}")
    try:
        from jax.experimental import mesh_utils

        grid = mesh_utils.create_device_mesh(sizes, devices=devices)
    except Exception:  # noqa: BLE001 - a shape mesh_utils cannot lay out physically: plain order
        grid = np.array(devices).reshape(sizes)
    return Mesh(grid, tuple(axes))


FAST_EFFORT = "EFFORT_O0"
"""The compiler's least effort: a tenth of the time (0.8 s of CPU for 8 on an MLP with Adam), the same arguments and
outputs, temporaries within a few percent (fusion differs); a screen, verified at the default effort."""


def compile_for_topology(step, args: tuple, *, donate_argnums: tuple[int, ...] = (), keep_dump: str | None = None,
                         effort: str | None = None) -> Compiled:
    """Compile ``step(*args)`` (args: ShapeDtypeStructs with shardings on the topology's mesh) for the TPU;
    ``effort``: the compiler's ``xla_optimization_level`` (None: its default)."""
    import jax

    from tpudoctor.captures.hlo import PlanError, decode_hlo_proto

    dump = tempfile.mkdtemp(prefix="tpudoctor-preflight-")
    start = time.perf_counter()
    try:
        fn = jax.jit(step, donate_argnums=donate_argnums) if donate_argnums or not hasattr(step, "lower") else step
        error, stats = "", {}
        try:
            lowered = fn.lower(*args)
            options: dict[str, Any] = {"xla_dump_to": dump, "xla_dump_hlo_as_proto": True}
            if effort:
                options["xla_optimization_level"] = effort
            compiled = lowered.compile(compiler_options=options)
            analysis = compiled.memory_analysis()
            stats = {name: int(getattr(analysis, name)) for name in dir(analysis) if name.endswith("_in_bytes")}
        except Exception as exc:  # noqa: BLE001 - the compiler's own error is the finding
            error = str(exc).strip()
        seconds = time.perf_counter() - start
        plan = None
        found = sorted(glob.glob(os.path.join(dump, "*.after_optimizations.hlo.pb")), key=os.path.getsize)
        if found:
            try:
                with open(found[-1], "rb") as fh:
                    plan = decode_hlo_proto(fh.read())
            except PlanError:
                plan = None
        if keep_dump:
            shutil.copytree(dump, keep_dump, dirs_exist_ok=True)
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    oom = read_out_of_memory(error)
    return Compiled(fits=not error, stats=stats, plan=plan, seconds=seconds, error=error, effort=effort or "default",
                    memory_space=oom.memory_space, required_bytes=oom.required_bytes,
                    available_bytes=oom.available_bytes)


_LIMITS: dict[str, int] = {}


def hbm_limit_bytes(devices: list[Any]) -> int | None:
    """The HBM a program may use on one chip of ``devices``, as the compiler says it: one compile of a program
    too large for any chip (a 1 TiB argument), whose out-of-memory text names the available HBM."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    kind = devices[0].device_kind
    if kind not in _LIMITS:
        mesh = build_mesh(devices[:1], {"probe": 1})
        huge = jax.ShapeDtypeStruct((1 << 38,), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec()))
        probe = compile_for_topology(lambda x: x * 2, (huge,), effort=FAST_EFFORT)
        if probe.available_bytes is None:
            return None
        _LIMITS[kind] = probe.available_bytes
    return _LIMITS[kind]
