"""Write the baseline-diff pairs: one good run and one failing run of benchmarks/baseline_job.py per failure kind,
real processes (JAX on CPU), each run's stdout and stderr as its log, into tests/data/logs/baseline_pairs/.

    python benchmarks/make_baseline_pairs.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "logs" / "baseline_pairs"
JOB = ROOT / "benchmarks" / "baseline_job.py"


def run(*args: str) -> str:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, str(JOB), *args], capture_output=True, text=True, timeout=300, env=env)
    return done.stdout + done.stderr


def main() -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from baseline_job import FAILURES

    OUT.mkdir(parents=True, exist_ok=True)
    for kind in FAILURES:
        (OUT / f"{kind}.good.log").write_text(run(), encoding="utf-8")
        (OUT / f"{kind}.bad.log").write_text(run("--fail", kind), encoding="utf-8")
        print(kind, "written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
