"""Parent-process peak RSS of ``tpudoctor.profile.analyze`` on a 1-host and an N-host logdir.

    .venv/bin/python benchmarks/bench_profile_hosts_rss.py [--source X.xplane.pb] [--scale 10] [--hosts 4]
    .venv/bin/python benchmarks/bench_profile_hosts_rss.py --hosts 64          # the pod case: target < 1 GB
    .venv/bin/python benchmarks/bench_profile_hosts_rss.py --hosts 64 --cluster tcp://SCHEDULER:8786

Builds ``<work>/1-host`` and ``<work>/N-host`` logdirs (``plugins/profile/<run>/host-K.xplane.pb``)
from a real capture (default: the v6e capture in ../shared/data, scaled xSCALE with
``make_big_capture.py`` so that a host's events dominate the interpreter's own memory; a fixture
from tests/fixtures/profiles where ../shared is absent). Each analysis runs in a fresh child
process, which prints its own peak RSS (VmHWM): the parent of the
per-host map. The map keeps each host's events in the worker that decoded it, so the parent's peak
should stay near one host's (below it, in fact: with several hosts the parent decodes none). For
contrast, ``load+analyze`` loads every host's events into the parent first (``tpudoctor.profile.load``,
the notebook path) and analyses them there; it runs only up to ``--load-max-hosts`` hosts (64 hosts'
events in one process is what the map avoids). With ``--cluster`` the map also runs on that Dask
cluster (the client's RSS: it decodes no host either). The hosts of a logdir are hard links of one file.
A logdir under ``tpudoctor.profile.executor.IN_PROCESS_MAX_BYTES`` in all is analysed in the parent,
one host after another (starting worker processes would cost more); ``analyze, processes`` then
times the same logdir in worker processes, for the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IN_PROCESS_MAX_BYTES = 32 << 20  # tpudoctor.profile.executor's: smaller logdirs are analysed in one process
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"
FALLBACK_SOURCE = REPO / "tests" / "fixtures" / "profiles" / "tf_input_bound" / "localhost.xplane.pb"

CHILD = """
import json, resource, sys, time
import tpudoctor.profile
from tpudoctor.profile.pipeline import analyze_capture
started = time.perf_counter()
if sys.argv[2] == "map":
    report = tpudoctor.profile.analyze(sys.argv[1])
elif sys.argv[2] == "processes":  # worker processes even where the capture is small enough for this one
    from tpudoctor.profile import executor
    executor.IN_PROCESS_MAX_BYTES = 0
    report = tpudoctor.profile.analyze(sys.argv[1])
elif sys.argv[2] == "cluster":
    report = tpudoctor.profile.analyze(sys.argv[1], cluster=sys.argv[3])
else:  # every host's events loaded into this process, then analysed here
    report = analyze_capture(tpudoctor.profile.load(sys.argv[1]))
elapsed = time.perf_counter() - started


def peak_rss_mb():  # VmHWM: ru_maxrss would carry the peak of the process that started this one over exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


print(json.dumps({
    "wall_s": elapsed, "hosts": len(report.hosts), "failed": len(report.failed_hosts), "events": report.summary.n_events, "verdict": report.verdict,
    "parent_peak_rss_mb": peak_rss_mb(),
}))
"""


def build_logdir(root: Path, host_file: Path, hosts: int) -> Path:
    run = root / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True, exist_ok=True)
    for k in range(hosts):
        target = run / f"host-{k}.xplane.pb"
        if not target.exists():
            try:
                os.link(host_file, target)  # 64 copies of one file need not take 64 times the disk
            except OSError:
                shutil.copyfile(host_file, target)
    return root


def measure(logdir: Path, how: str, cluster: str | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(logdir), how, *([cluster] if cluster else [])],
                          capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE if DEFAULT_SOURCE.exists() else FALLBACK_SOURCE)
    parser.add_argument("--scale", type=int, default=10, help="repeat every line's events this many times")
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--load-max-hosts", type=int, default=4,
                        help="run load+analyze (every host in the parent) only on logdirs of at most this many hosts")
    parser.add_argument("--cluster", metavar="tcp://SCHEDULER:8786",
                        help="also run the map on this Dask cluster (its workers must see --work)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tpudoctor-bench-hosts")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    host_file = args.work / f"{args.source.stem}-x{args.scale}.xplane.pb"
    if not host_file.exists():
        if args.scale == 1:
            shutil.copyfile(args.source, host_file)
        else:
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_big_capture.py"), str(args.source),
                            str(args.scale), str(host_file)], check=True)
    print(f"host file: {host_file.name}, {host_file.stat().st_size / 1e6:.1f} MB (x{args.scale} of {args.source.name})")
    print(f"{'logdir':<10} {'path':<22} {'hosts':>5} {'events':>11} {'wall s':>8} {'parent peak RSS MB':>19}  verdict")
    for hosts in (1, args.hosts):
        logdir = build_logdir(args.work / f"{hosts}-host-{host_file.stem}", host_file, hosts)
        modes = [("map", "analyze (map+combine)")]
        if hosts > 1 and hosts * host_file.stat().st_size < IN_PROCESS_MAX_BYTES:  # the map ran in this process
            modes.append(("processes", "analyze, processes"))
        if hosts <= args.load_max_hosts:
            modes.append(("load", "load+analyze"))
        if args.cluster:
            modes.append(("cluster", "analyze --cluster"))
        for how, label in modes:
            m = measure(logdir, how, args.cluster)
            failed = f"  ({m['failed']} host(s) failed)" if m["failed"] else ""
            print(f"{f'{hosts}-host':<10} {label:<22} {m['hosts']:>5} {m['events']:>11,} {m['wall_s']:>8.2f} "
                  f"{m['parent_peak_rss_mb']:>19.0f}  {m['verdict']}{failed}")


if __name__ == "__main__":
    main()
