"""Every fake x every fault through the real CLI: the check that reports it, and the run's wall time.

    .venv/bin/python benchmarks/fault_matrix.py

Prints one row per (fake, fault) and the worst-case run time against --timeout. The same matrix
runs as assertions in tests/test_faults.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from test_faults import ARGS, CHECK_FOR, FAKES, RUN_TIMEOUT_S, world  # noqa: E402

from tpudoctor.testing.faults import ALL_FAULTS  # noqa: E402


def main() -> None:
    from tpudoctor.cli import main as cli

    worst = (0.0, "")
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        for sub in ("sys", "proc", "dev", "gcloud"):
            (root / sub).mkdir()
        for var, sub in (("CLOUDSDK_CONFIG", "gcloud"), ("TPUDOCTOR_SYSFS_ROOT", "sys"),
                         ("TPUDOCTOR_PROC_ROOT", "proc"), ("TPUDOCTOR_DEV_ROOT", "dev")):
            mp.setenv(var, str(root / sub))
        mp.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(root / "none.json"))
        mp.setenv("TPUDOCTOR_LIBTPU_LOCKFILE", str(root / "lock"))
        mp.chdir(root)
        for fake in FAKES:
            for fault in ALL_FAULTS:
                out = io.StringIO()
                with world(fake, fault, mp), contextlib.redirect_stdout(out), \
                        contextlib.redirect_stderr(io.StringIO()):
                    started = time.monotonic()
                    cli(ARGS)
                    elapsed_s = time.monotonic() - started
                result = {r["id"]: r for r in json.loads(out.getvalue())["results"]}[CHECK_FOR[fake]]
                worst = max(worst, (elapsed_s, f"{fake}/{fault}"))
                print(f"{fake:<10} {fault:<9} {elapsed_s:5.2f}s  {result['id']} {result['status']:<5} "
                      f"{result['message'][:110]}", flush=True)
    print(f"{len(FAKES) * len(ALL_FAULTS)} faults injected; worst run {worst[0]:.2f}s ({worst[1]}) "
          f"with --timeout {RUN_TIMEOUT_S:g}s and --api-timeout 1s")


if __name__ == "__main__":
    main()
