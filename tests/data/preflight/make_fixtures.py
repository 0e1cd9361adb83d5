"""Writes this folder's fixtures with the real TPU compiler (libtpu) on this host:

    TPU_LOG_DIR=$(mktemp -d) .venv/bin/python tests/data/preflight/make_fixtures.py

* ``v5e_mlp_adam_oom.txt``: the compile error of examples/preflight/programs.py:mlp_adam on v5e:2x2 (25.03G);
* ``v5e_mlp_adam_oom.libtpu.log``: libtpu's own log of it (its ``Memory usage report`` tables);
* ``v5e_mlp_adam_oom.hlo.pb``: the buffer assignment it dumped before it gave up;
* ``v5e_pallas_vmem_oom.txt``: examples/preflight/pallas_matmul.py's kernel over the v5e's VMEM;
* ``v5e_mlp_adam_1024.memory_analysis.txt`` / ``.hlo.pb`` / ``.json``: a program that fits (width 1024): what
  ``print(compiled.memory_analysis())`` prints, its buffer assignment and memory_analysis()'s fields.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "examples" / "preflight"))


def main() -> None:
    from tpudoctor.preflight import compiler

    log_dir = os.environ.get("TPU_LOG_DIR") or tempfile.mkdtemp()
    compiler.prepare_environment(log_dir)
    import jax
    import pallas_matmul
    import programs

    devices = compiler.topology_devices("v5e:2x2")
    mesh = compiler.build_mesh(devices, {"data": 2, "model": 2})

    with tempfile.TemporaryDirectory() as dump:
        step, args = programs.mlp_adam(mesh)
        oom = compiler.compile_for_topology(step, args, keep_dump=dump)
        assert oom.out_of_memory, oom.error
        (HERE / "v5e_mlp_adam_oom.txt").write_text(oom.error + "\n")
        shutil.copy(glob.glob(f"{dump}/*.after_optimizations.hlo.pb")[0], HERE / "v5e_mlp_adam_oom.hlo.pb")
    logs = sorted(glob.glob(f"{log_dir}/*.ERROR.*"), key=os.path.getmtime)
    text = Path(logs[-1]).read_text()
    start = text.index("XLA:TPU compile permanent error. Ran out of memory in memory space hbm")
    (HERE / "v5e_mlp_adam_oom.libtpu.log").write_text(text[text.rindex("\n", 0, start) + 1:])

    with tempfile.TemporaryDirectory() as dump:
        step, args = programs.mlp_adam(mesh, width=1024)
        fits = compiler.compile_for_topology(step, args, keep_dump=dump)
        assert fits.fits, fits.error
        shutil.copy(glob.glob(f"{dump}/*.after_optimizations.hlo.pb")[0],
                    HERE / "v5e_mlp_adam_1024.hlo.pb")
        printed = jax.jit(step).lower(*args).compile().memory_analysis()
        (HERE / "v5e_mlp_adam_1024.memory_analysis.txt").write_text(f"{printed}\n")
        (HERE / "v5e_mlp_adam_1024.json").write_text(json.dumps(fits.stats, indent=1, sort_keys=True) + "\n")

    step, args = pallas_matmul.matmul_step(compiler.build_mesh(devices, None))
    vmem = compiler.compile_for_topology(step, args)
    assert vmem.memory_space == "vmem", vmem.error
    (HERE / "v5e_pallas_vmem_oom.txt").write_text(vmem.error + "\n")


if __name__ == "__main__":
    main()
