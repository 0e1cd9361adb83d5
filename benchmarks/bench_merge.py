"""How long ``tpudoctor merge`` takes for 64 per-worker reports, from a folder and from gs://.

    .venv/bin/python benchmarks/bench_merge.py

One real report comes from ``tpudoctor check --step 1 --step 3 --format json`` on a fake v4 host; 64 copies,
one per worker (two with a failing check), are written to a folder and uploaded to the storage emulator
(tpudoctor.testing.fake_gcs). Prints the wall time of the whole command (process start included) and of the
read + merge + render in-process, best of a few runs. The target is under 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tpudoctor.testing.fake_gcs import FakeGcs
from tpudoctor.testing.fake_host import build_fake_tpu_host
from tpudoctor.testing.loopback import free_port
from tpudoctor.testing.pod_reports import write_worker_reports

WORKERS = 64
RUNS = 3
TPUDOCTOR = str(Path(sys.executable).parent / "tpudoctor")


def base_report(tmp: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([TPUDOCTOR, "check", "--step", "1", "--step", "3", "--format", "json", "--worker", "0"],
                          env=env, capture_output=True, text=True, cwd=tmp, timeout=120)
    return json.loads(proc.stdout)


def timed_cli(argv: list[str], env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        proc = subprocess.run([TPUDOCTOR, *argv], env=env, capture_output=True, text=True, timeout=120)
        best = min(best, time.perf_counter() - started)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"merge failed: {proc.stderr}")
    return best


def timed_in_process(sources: list[str]) -> float:
    from tpudoctor.documents import merged_document
    from tpudoctor.pod.merge import merge_outcomes
    from tpudoctor.pod.report_store import read_reports
    from tpudoctor.rendering import render

    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        merged = merge_outcomes(read_reports(sources))
        document = merged_document(merged, redact=False)
        render(document, "text")
        render(document, "json")
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = {**os.environ, **build_fake_tpu_host(tmp / "host", "v4", chips=4),
               "GCE_METADATA_HOST": f"127.0.0.1:{free_port()}", "CLOUDSDK_CONFIG": str(tmp / "gcloud"),
               "GOOGLE_APPLICATION_CREDENTIALS": str(tmp / "none.json")}
        base = base_report(tmp, env)
        paths = write_worker_reports(base, tmp / "run", WORKERS, problems={3: "NODE-005", 7: "NODE-005"},
                                     slice_workers=WORKERS)
        size = sum(p.stat().st_size for p in paths)
        print(f"{WORKERS} reports, {len(base['results'])} results each, {size / 1024:.0f} KiB in all")
        local_cli = timed_cli(["merge", str(tmp / "run"), "--format", "json", "-o", str(tmp / "m.json")], env)
        local_inproc = timed_in_process([str(tmp / "run")])
        print(f"merge local folder : {local_cli:.2f} s (command), {local_inproc:.2f} s (read + merge + render)")
        with FakeGcs() as gcs:
            gcs.create_bucket("pod-reports")
            for path in paths:
                gcs.upload("pod-reports", f"run/{path.name}", path.read_bytes())
            env["STORAGE_EMULATOR_HOST"] = gcs.url
            os.environ["STORAGE_EMULATOR_HOST"] = gcs.url
            gcs_cli = timed_cli(["merge", "gs://pod-reports/run/", "--format", "json", "-o", str(tmp / "g.json")], env)
            gcs_inproc = timed_in_process(["gs://pod-reports/run/"])
        print(f"merge gs:// prefix : {gcs_cli:.2f} s (command), {gcs_inproc:.2f} s (read + merge + render)")
        print("target: under 2 s each")


if __name__ == "__main__":
    main()
