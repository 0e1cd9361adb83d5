"""The measurements of a diag run, taken once on every local device with JAX (TPU, GPU or CPU).

Each returns data (dataclasses with pandas frames, units in the column names), never a verdict: the rules judge.
Timed runs go device by device, the order shuffled each repetition, so a burst of load on the host falls on
every device alike and a device is compared with its peers *in the same repetition* (``stats``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from tpudoctor.diag.faults import FaultPlan, stretch
from tpudoctor.diag.levels import Sizes


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    index: int
    """Position in ``jax.local_devices()``; what ``--inject`` and the report's chip names use."""
    id: int
    platform: str
    kind: str
    process_index: int
    coords: tuple[int, ...] | None
    slice_index: int | None

    @property
    def chip(self) -> str:
        return f"{self.platform}:{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "platform": self.platform, "kind": self.kind,
                "process_index": self.process_index, "coords": list(self.coords) if self.coords else None,
                "slice_index": self.slice_index, "chip": self.chip}


@dataclasses.dataclass
class Inventory:
    backend: str
    """``tpu``, ``gpu`` or ``cpu``: what PJRT loaded."""
    jax_version: str
    devices: list[DeviceInfo]
    process_count: int
    error: str | None = None
    """Why the backend could not be loaded (then ``devices`` is empty)."""
    jax_platforms: str | None = None
    """``JAX_PLATFORMS`` as this process had it: the backends JAX was told to load (None: unset)."""


@dataclasses.dataclass
class GemmCheck:
    size: int
    max_relative_error: pd.Series
    """Per device index: max |result - golden| / max |golden| (golden in float64 by NumPy)."""
    digests: pd.Series
    """Per device index: SHA-256 of the result's bytes (same inputs, same program: must be equal bitwise)."""


RATE_UNITS = {"tflops": "TFLOP/s", "gbps": "GB/s"}
"""A timed run's rate unit (the frame's column) as the reports write it."""


@dataclasses.dataclass
class Timings:
    """Repeated timed runs: one row per (repetition, device)."""

    frame: pd.DataFrame
    """Columns: rep, device, seconds, rate (``unit``), and window for a soak."""
    unit: str
    work: float
    """FLOPs or bytes per timed run."""
    size: str
    """What one run was, in words (``4 x 1024^3 f32 matmul``)."""
    wall_s: float = 0.0
    """How long the measurement took, warm-up included (what a second look would cost)."""
    looks: tuple[dict, ...] = ()
    """Where the first look was unclear (``second_look``): each look's reps, spread and why it was unclear."""
    judged_on: str = ""
    """Which looks the figures are, in words, where there was more than one to choose from."""


def inventory() -> Inventory:
    platforms = os.environ.get("JAX_PLATFORMS")
    try:
        import jax

        devices = jax.local_devices()
        backend = jax.default_backend()
        count = jax.process_count()
    except Exception as exc:  # noqa: BLE001 - a backend that cannot load is what r1 reports
        version = _jax_version()
        return Inventory(backend="none", jax_version=version, devices=[], process_count=0,
                         error=f"{type(exc).__name__}: {exc}", jax_platforms=platforms)
    infos = [DeviceInfo(index=i, id=int(d.id), platform=d.platform, kind=str(getattr(d, "device_kind", d.platform)),
                        process_index=int(getattr(d, "process_index", 0)),
                        coords=tuple(getattr(d, "coords", ()) or ()) or None,
                        slice_index=getattr(d, "slice_index", None)) for i, d in enumerate(devices)]
    return Inventory(backend=backend, jax_version=jax.__version__, devices=infos, process_count=count,
                     jax_platforms=platforms)


def _jax_version() -> str:
    try:
        from importlib.metadata import version

        return version("jax")
    except Exception:  # noqa: BLE001
        return "not installed"


def _rng_inputs(n: int, seed: int = 20261202) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32)
    return a, b


def gemm_check(sizes: Sizes, faults: FaultPlan) -> GemmCheck:
    """The same GEMM on every device: against a float64 golden computed once, and bitwise against each other."""
    import jax
    import jax.numpy as jnp

    a, b = _rng_inputs(sizes.gemm_n)
    golden = a.astype(np.float64) @ b.astype(np.float64)
    scale = float(np.abs(golden).max())
    fn = jax.jit(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))
    errors, digests = {}, {}
    for index, device in enumerate(jax.local_devices()):
        out = np.array(fn(jax.device_put(a, device), jax.device_put(b, device)))
        if faults.flips(index):
            out.view(np.uint32).flat[out.size // 2] ^= np.uint32(1 << 22)  # a mantissa bit of one element
        errors[index] = float(np.abs(out.astype(np.float64) - golden).max() / scale)
        digests[index] = hashlib.sha256(out.tobytes()).hexdigest()
    return GemmCheck(size=sizes.gemm_n, max_relative_error=pd.Series(errors, name="max_relative_error"),
                     digests=pd.Series(digests, name="sha256"))


SHUFFLE_SEED = 20261202


def _timed(runs: Mapping[int, Callable[[], Any]], reps: int, faults: FaultPlan, *, soak_s: float | None = None,
           progress: Callable[[float], None] | None = None) -> pd.DataFrame:
    """Each run once to compile and warm, then ``reps`` rounds (or rounds until ``soak_s`` has passed), the device
    order shuffled each round (seeded): a rotation keeps each device behind the same predecessor, whose after-effects
    (a cooling thread pool, a busy core) then fall on it alone and read as a few per cent of its own."""
    for run in runs.values():
        run()
    rows = []
    order = list(runs)
    shuffle = np.random.default_rng(SHUFFLE_SEED)
    started = time.perf_counter()
    for rep in itertools.count():
        elapsed_total = time.perf_counter() - started
        if soak_s is None and rep >= reps or soak_s is not None and elapsed_total >= soak_s:
            break
        fraction = elapsed_total / soak_s if soak_s else None
        for device in shuffle.permutation(order).tolist():
            t0 = time.perf_counter()
            runs[device]()
            seconds = stretch(t0, time.perf_counter() - t0, faults.extra_fraction(device, soak_fraction=fraction))
            rows.append((rep, device, seconds, elapsed_total))
        if progress is not None:
            progress(fraction if fraction is not None else (rep + 1) / reps)
    return pd.DataFrame(rows, columns=["rep", "device", "seconds", "at_s"])


def matmul_throughput(sizes: Sizes, faults: FaultPlan, *, soak_s: float | None = None,
                      progress: Callable[[float], None] | None = None) -> Timings:
    """Sustained matmul rate per device: a chain of ``matmul_chain`` n x n matmuls per timed run."""
    import jax
    import jax.numpy as jnp

    n, chain = sizes.matmul_n, sizes.matmul_chain
    dtype = jnp.float32 if jax.default_backend() == "cpu" else jnp.bfloat16

    @jax.jit
    def run_chain(x, w):
        for _ in range(chain):
            x = jnp.matmul(x, w)
        return x

    started = time.perf_counter()
    a, b = _rng_inputs(n)
    runs = {}
    for index, device in enumerate(jax.local_devices()):
        x, w = jax.device_put(a.astype(dtype), device), jax.device_put(b.astype(dtype), device)
        runs[index] = (lambda x=x, w=w: run_chain(x, w).block_until_ready())
    frame = _timed(runs, sizes.reps, faults, soak_s=soak_s, progress=progress)
    flops = 2.0 * n ** 3 * chain
    frame["tflops"] = flops / frame["seconds"] / 1e12
    return Timings(frame=frame, unit="tflops", work=flops, size=f"{chain} x {n}^3 {jnp.dtype(dtype).name} matmul",
                   wall_s=time.perf_counter() - started)


def hbm_bandwidth(sizes: Sizes, faults: FaultPlan, progress: Callable[[float], None] | None = None) -> Timings:
    """Memory bandwidth per device: read an array of ``hbm_bytes`` and write its result (2 x bytes moved)."""
    import jax
    import jax.numpy as jnp

    started = time.perf_counter()
    count = sizes.hbm_bytes // 4
    step = jax.jit(lambda x: x * 1.000001 + 1.0)
    runs, arrays = {}, []
    for index, device in enumerate(jax.local_devices()):
        x = jax.device_put(jnp.zeros((count,), jnp.float32), device)
        arrays.append(x)
        runs[index] = (lambda x=x: step(x).block_until_ready())
    frame = _timed(runs, sizes.hbm_reps, faults, progress=progress)
    moved = 2.0 * count * 4
    frame["gbps"] = moved / frame["seconds"] / 1e9
    del arrays
    return Timings(frame=frame, unit="gbps", work=moved, size=f"{count * 4 / 2**30:.2f} GiB f32 read + write",
                   wall_s=time.perf_counter() - started)


@dataclasses.dataclass
class AllReduce:
    axes: dict[str, int]
    """Mesh axis -> its size."""
    frame: pd.DataFrame
    """Columns: axis, rep, seconds, bus_gbps (NCCL's bus bandwidth: bytes x 2(k-1)/k / time)."""
    bytes_per_device: int


def mesh_shape(count: int) -> dict[str, int]:
    """Two axes where the devices factor (8 -> x=2, y=4), else one."""
    for first in (2, 4, 8):
        if count % first == 0 and count // first > 1:
            return {"x": first, "y": count // first}
    return {"x": count}


def all_reduce(sizes: Sizes, progress: Callable[[float], None] | None = None) -> AllReduce | None:
    """psum of a ``allreduce_bytes`` buffer per device along each mesh axis; None with fewer than 2 devices."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.local_devices()
    if len(devices) < 2:
        return None
    axes = mesh_shape(len(devices))
    mesh = Mesh(np.array(devices).reshape(tuple(axes.values())), tuple(axes))
    per_device = sizes.allreduce_bytes // 4
    spec = P(tuple(axes))
    data = jax.device_put(jnp.ones((per_device * len(devices),), jnp.float32), NamedSharding(mesh, spec))
    rows = []
    for axis_number, (axis, k) in enumerate(axes.items()):
        reduce = jax.jit(jax.shard_map(lambda a, axis=axis: jax.lax.psum(a, axis), mesh=mesh, in_specs=spec,
                                       out_specs=spec))
        reduce(data).block_until_ready()
        for rep in range(sizes.reps):
            t0 = time.perf_counter()
            reduce(data).block_until_ready()
            seconds = time.perf_counter() - t0
            rows.append((axis, rep, seconds, per_device * 4 * 2 * (k - 1) / k / seconds / 1e9))
        if progress is not None:
            progress((axis_number + 1) / len(axes))
    return AllReduce(axes=axes, frame=pd.DataFrame(rows, columns=["axis", "rep", "seconds", "bus_gbps"]),
                     bytes_per_device=per_device * 4)


@dataclasses.dataclass
class DcnAllReduce(AllReduce):
    """The all-reduce across slices (or, where the devices name no slice, across the processes' hosts): the
    data-centre network link a multi-slice job's gradients cross."""

    across: str = "slices"
    """``slices`` (devices carry ``slice_index``) or ``processes`` (one group per process: GPU/CPU hosts)."""
    process_count: int = 1


def join_distributed(coordinator: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None) -> None:
    """Join the multi-process JAX run every worker starts together (``jax.distributed.initialize``; on a TPU VM
    or under GKE it finds the coordinator itself). On the CPU backend collectives go over gloo."""
    import jax

    if os.environ.get("JAX_PLATFORMS", "") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    kwargs: dict[str, Any] = {k: v for k, v in (("coordinator_address", coordinator), ("num_processes", num_processes),
                                 ("process_id", process_id)) if v is not None}
    jax.distributed.initialize(**kwargs)


def dcn_all_reduce(sizes: Sizes, progress: Callable[[float], None] | None = None) -> DcnAllReduce | None:
    """psum of ``allreduce_bytes`` per device across the slices (or processes) of the run, every process in
    step; None where the run has one slice and one process (no DCN link to test)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices()
    slices = {getattr(d, "slice_index", None) for d in devices}
    across = "slices" if None not in slices and len(slices) > 1 else "processes"
    group = (lambda d: d.slice_index) if across == "slices" else (lambda d: d.process_index)
    groups = sorted({group(d) for d in devices})
    if len(groups) < 2:
        return None
    members = [sorted((d for d in devices if group(d) == g), key=lambda d: d.id) for g in groups]
    if len({len(m) for m in members}) != 1:
        return None  # uneven slices: no rectangular mesh to time one link on
    mesh = Mesh(np.array(members), ("dcn", "ici"))
    per_device = sizes.allreduce_bytes // 4
    spec = P(("dcn", "ici"))
    local = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    sharding = NamedSharding(mesh, spec)
    shape = (per_device * len(devices),)
    chunk = jnp.ones((per_device,), jnp.float32)
    data = jax.make_array_from_single_device_arrays(shape, sharding,
                                                    [jax.device_put(chunk, d) for d in local])
    reduce = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "dcn"), mesh=mesh, in_specs=spec, out_specs=spec))
    reduce(data).block_until_ready()
    k = len(groups)
    rows = []
    for rep in range(sizes.reps):
        t0 = time.perf_counter()
        reduce(data).block_until_ready()
        seconds = time.perf_counter() - t0
        rows.append(("dcn", rep, seconds, per_device * 4 * 2 * (k - 1) / k / seconds / 1e9))
        if progress is not None:
            progress((rep + 1) / sizes.reps)
    return DcnAllReduce(axes={"dcn": k}, frame=pd.DataFrame(rows, columns=["axis", "rep", "seconds", "bus_gbps"]),
                        bytes_per_device=per_device * 4, across=across, process_count=jax.process_count())
