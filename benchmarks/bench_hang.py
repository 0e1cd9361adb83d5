"""How long ``tpudoctor hang`` takes, and how long it pauses the job it looks at.

    .venv/bin/python benchmarks/bench_hang.py

1. Four local processes: the real JAX job of ``tpudoctor.testing.hung_job`` (4 CPU processes, gloo
   all-reduce), ``tpudoctor hang --pid x4`` as a user runs it, moving and hung (a stalled data loader,
   where ``--native auto`` adds one native dump). Printed: the whole command's wall time minus the
   ``--interval`` sleep (the tool's own time, process start included), median of a few runs. Target < 5 s.
2. 64 workers: 64 workers' hang documents (real captures, tests/data/hang) merged and analysed as
   ``--all-workers`` does after the ssh calls, and rendered; best of a few runs. Target < 5 s.
3. The pause: a process that measures the longest gap in its own loop (a Python thread, with JAX loaded so
   it has JAX's threads) while py-spy dumps it, Python frames only and ``--native``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tpudoctor.testing.hung_job import HungJob

RUNS = 3
INTERVAL_S = 1.0
CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "hang"
TICKER = """\
import sys, time
import jax  # its threads, as in a training process
jax.numpy.zeros(4).block_until_ready()
print("ready", flush=True)
window, worst, last = time.perf_counter(), 0.0, time.perf_counter()
while True:
    now = time.perf_counter()
    worst = max(worst, now - last)
    last = now
    if now - window > 0.1:
        print(f"{time.time():.3f} {worst * 1000:.2f}", flush=True)
        window, worst = now, 0.0
"""


def own_time(job: HungJob) -> float:
    times = []
    for _ in range(RUNS):
        argv = [sys.executable, "-m", "tpudoctor", "hang", "--interval", f"{INTERVAL_S:g}s", "--format", "json",
                *[a for p in job.pids for a in ("--pid", str(p))]]
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, text=True, timeout=300)
        times.append(time.perf_counter() - started - INTERVAL_S)
    return statistics.median(times)


def merge_time() -> tuple[float, int]:
    from tpudoctor.findings import Target
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.capture import read_dump_dir
    from tpudoctor.hang.pod import merge_answers
    from tpudoctor.rendering import render

    def render_json(report):
        return render(report.to_dict(), "json")

    def render_text(report):
        return render(report.to_dict(), "text")

    capture = read_dump_dir(str(CAPTURES / "data_loader"))
    documents = []
    for worker, one in enumerate(capture.captures):  # one real document per process, 16 of each
        report = analyze([one], target=Target(), host=f"w{worker}", started_at=capture.started_at,
                         interval_s=capture.interval_s, samples=capture.samples)
        documents.append(json.loads(render_json(report)))
    answers = {str(w): json.loads(json.dumps(documents[w % len(documents)])) for w in range(64)}
    size = sum(len(json.dumps(a)) for a in answers.values())
    best = float("inf")
    for _ in range(RUNS):
        fresh = {w: json.loads(json.dumps(a)) for w, a in answers.items()}
        started = time.perf_counter()
        merged = merge_answers(fresh, target=Target(tpu="pod", zone="z"), started_at=capture.started_at,
                               interval_s=1.0, source="bench")
        render_text(merged)
        render_json(merged)
        best = min(best, time.perf_counter() - started)
    return best, size


def pauses(dumps: int = 10) -> dict[str, tuple[float, float]]:
    """Per dump, the longest gap the ticker saw in the 0.1 s windows around it: (median, worst) in ms."""
    import threading

    pyspy = str(Path(sys.executable).parent / "py-spy")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(TICKER)
    proc = subprocess.Popen([sys.executable, script.name], stdout=subprocess.PIPE, text=True)
    windows: list[tuple[float, float]] = []
    try:
        assert proc.stdout.readline().strip() == "ready"

        def read() -> None:
            for line in proc.stdout:
                stamp, gap = line.split()
                windows.append((float(stamp), float(gap)))

        threading.Thread(target=read, daemon=True).start()
        found = {}
        for label, extra in (("no dump (baseline)", None), ("py-spy dump", []), ("py-spy dump --native", ["--native"])):
            per_dump = []
            for _ in range(dumps):
                start = time.time()
                if extra is None:
                    time.sleep(0.05)
                else:
                    subprocess.run([pyspy, "dump", "--pid", str(proc.pid), *extra], capture_output=True, timeout=60)
                end = time.time()
                time.sleep(0.3)  # let the windows around it arrive
                around = [gap for stamp, gap in list(windows) if start <= stamp <= end + 0.15]
                per_dump.append(max(around, default=0.0))
            found[label] = (statistics.median(per_dump), max(per_dump))
        return found
    finally:
        proc.kill()
        proc.wait()
        Path(script.name).unlink()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-hang-") as workdir, HungJob(workdir, processes=4) as job:
        moving = own_time(job)
        with job.data_loader_stalled(2):
            hung = own_time(job)
    print(f"tpudoctor hang, 4 local JAX processes, tool's own time (wall - {INTERVAL_S:g}s interval), "
          f"median of {RUNS}:")
    print(f"  job moving: {moving:.2f} s   job hung (+ one native dump): {hung:.2f} s   (target < 5 s)")
    seconds, size = merge_time()
    print(f"merge + analyse + render 64 workers' documents ({size / 1e6:.1f} MB of JSON), best of {RUNS}: "
          f"{seconds:.2f} s (target < 5 s beyond the ssh calls)")
    print("longest stall of a Python loop in a JAX process around each of 10 py-spy dumps (median / worst, ms):")
    for label, (median, worst) in pauses().items():
        print(f"  {label}: {median:.1f} / {worst:.1f} ms")


if __name__ == "__main__":
    main()
