"""Every fake x every fault through the real CLI: the check that reports it, and the run's wall time;
then every hostile input (names that are gcloud flags, escape sequences and markup in reports, numbers
that are not finite, repeated result ids, capture file names with HTML) and how the CLI ended.

    .venv/bin/python benchmarks/fault_matrix.py              # both matrices
    .venv/bin/python benchmarks/fault_matrix.py --hostile    # the hostile inputs only (seconds)

Prints one row per (fake, fault) and the worst-case run time against --timeout, one row per hostile
input with its exit code and whether its output held. The same matrices run as assertions in
tests/check/test_faults.py.
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

from test_faults import (  # noqa: E402
    ARGS,
    CHECK_FOR,
    FAKES,
    HOSTILE,
    RUN_TIMEOUT_S,
    hostile_output_problems,
    run_hostile,
    world,
)

from tpudoctor.testing.faults import ALL_FAULTS  # noqa: E402


def main() -> None:
    if "--hostile" not in sys.argv:
        faults()
    hostile()


def hostile() -> None:
    held = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(sorted(HOSTILE)):
            folder = Path(tmp) / f"case-{i}"
            folder.mkdir()
            with pytest.MonkeyPatch.context() as mp:
                for var in ("TPU_NAME", "CLOUDSDK_CORE_PROJECT", "CLOUDSDK_COMPUTE_ZONE", "TPUDOCTOR_FORMAT"):
                    mp.delenv(var, raising=False)
                mp.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # no metadata server: refused at once
                code, out, err, elapsed_s = run_hostile(name, folder, mp)
            problems = hostile_output_problems(name, folder, code, out, err)
            held += not problems
            print(f"{name:<56} exit {code} (want {HOSTILE[name][1]}) {elapsed_s:5.2f}s  "
                  f"{'held' if not problems else 'BROKEN: ' + '; '.join(problems)}", flush=True)
    print(f"{len(HOSTILE)} hostile inputs; {held} refused or shown as they should be, never run")


def faults() -> None:
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
