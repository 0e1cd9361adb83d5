"""Make the straggler what-if captures under tests/data/whatif/ (JAX on CPU, real gloo collectives).

    .venv/bin/python tests/data/whatif/generate.py

The job of ``tests/fixtures/profiles/generate_multihost.py`` (its helpers are reused: 4 processes
joined by ``jax.distributed.initialize`` on loopback, one CPU device each, a train step whose
gradient XLA all-reduces across the processes), run twice back to back:

* ``delayed``: process ``SLOW_WORKER`` does ``EXTRA_MATMULS`` extra (jitted, blocked-on) matmuls
  inside every step before dispatching the train step, so it reaches the all-reduce late;
* ``undelayed``: the same job without the extra work (the rerun the what-if predicts);
* ``onset``: process ``SLOW_WORKER`` does ``ONSET_MATMULS`` extra matmuls only from step ``ONSET_STEP``
  of ``ONSET_STEPS`` on (a slowdown that began mid-run, for the what-if's change point).

Each process traces ``STEPS`` steps (``StepTraceAnnotation``, Python tracer off); the files are laid
out as ``<case>/plugins/profile/<run>/worker<i>.xplane.pb``.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parents[1] / "fixtures" / "profiles"
sys.path.insert(0, str(FIXTURES))
import generate_multihost as gm  # noqa: E402

HOSTS, STEPS, SLOW_WORKER = gm.HOSTS, 16, gm.SLOW_WORKER
EXTRA_MATMULS, EXTRA_SIZE = 6, 384
ONSET_STEP, ONSET_STEPS, ONSET_MATMULS = 10, 20, 18
CASES = ("delayed", "undelayed", "onset")


def worker(case: str, process_id: int, port: int, logdir: str) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=HOSTS, process_id=process_id,
                               initialization_timeout=120)
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((HOSTS,), ("hosts",), devices=jax.devices())
    batch_sharding, replicated = NamedSharding(mesh, P("hosts")), NamedSharding(mesh, P())

    @jax.jit
    def train_step(w, x):
        def loss(w):
            return jnp.mean(jnp.tanh(x @ w) ** 2)
        return w - 0.01 * jax.grad(loss)(w)

    local = jax.local_devices()[0]

    @jax.jit
    def extra(m):  # the slow process's extra compute, on its own device only
        for _ in range(ONSET_MATMULS if case == "onset" else EXTRA_MATMULS):
            m = jnp.tanh(m @ m)
        return m

    rng = np.random.default_rng(process_id)
    slow = process_id == SLOW_WORKER and case in ("delayed", "onset")
    first_slow_step = ONSET_STEP if case == "onset" else 0
    m = jax.device_put(jnp.full((EXTRA_SIZE, EXTRA_SIZE), 0.001, jnp.float32), local)
    extra(m).block_until_ready()

    def local_batch():
        data = rng.standard_normal((gm.BATCH_PER_HOST, gm.WIDTH)).astype(np.float32)
        return jax.make_array_from_process_local_data(batch_sharding, data)

    w = jax.make_array_from_process_local_data(replicated, np.full((gm.WIDTH, gm.WIDTH), 0.01, np.float32))
    for _ in range(3):
        w = train_step(w, local_batch())
    w.block_until_ready()
    multihost_utils.sync_global_devices("warm")
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    jax.profiler.start_trace(logdir, profiler_options=options)
    try:
        for step in range(ONSET_STEPS if case == "onset" else STEPS):
            batch = local_batch()
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                if slow and step >= first_slow_step:
                    extra(m).block_until_ready()
                w = train_step(w, batch)
                w.block_until_ready()
    finally:
        jax.profiler.stop_trace()
    multihost_utils.sync_global_devices("done")
    jax.distributed.shutdown()


def run_case(case: str, out_dir: Path, timeout_s: float = 600.0) -> list[Path]:
    port = gm._free_port()
    with tempfile.TemporaryDirectory(prefix=f"tpudoctor-whatif-{case}-") as tmp:
        env = dict(os.environ, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2",
                   XLA_FLAGS="--xla_force_host_platform_device_count=1")
        procs = [subprocess.Popen([sys.executable, __file__, "--child", case, str(i), str(port), f"{tmp}/w{i}"],
                                  env=env) for i in range(HOSTS)]
        deadline = time.monotonic() + timeout_s
        codes = [proc.wait(timeout=max(1.0, deadline - time.monotonic())) for proc in procs]
        if any(codes):
            raise SystemExit(f"{case}: worker exit codes {codes}")
        target = out_dir / case / "plugins" / "profile" / gm.RUN_NAME
        if (out_dir / case).exists():
            shutil.rmtree(out_dir / case)
        target.mkdir(parents=True)
        written = []
        for i in range(HOSTS):
            found = sorted(glob.glob(f"{tmp}/w{i}/plugins/profile/*/*.xplane.pb"))
            if len(found) != 1:
                raise SystemExit(f"{case}: worker {i} wrote {found}, expected one .xplane.pb")
            written.append(Path(shutil.copyfile(found[0], target / f"worker{i}.xplane.pb")))
        return written


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        case, process_id, port, logdir = argv[1:5]
        worker(case, int(process_id), int(port), logdir)
        return 0
    for case in argv or CASES:
        started = time.monotonic()
        files = run_case(case, HERE)
        print(f"{case}: {', '.join(f'{p.name} {p.stat().st_size:,} B' for p in files)} "
              f"in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
