"""Read a large generated training log with ``tpudoctor goodput`` and print wall time and peak memory.

    python benchmarks/goodput_large_log.py            # 1 GiB in /tmp (generated once, reused)
    python benchmarks/goodput_large_log.py --size-mb 100
    python benchmarks/goodput_large_log.py --size-mb 200 --form inferred   # step lines no known form reads

The log is MaxText-shaped (absl prefixes, a step line per second among runtime noise, an async Orbax save
every 500 steps, a failure and a restart half way). The read runs in a fresh subprocess so its peak RSS
is its own, not the generator's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

NOISE = (
    "I{md} {hms}.{us:06d} 140136352118592 tpu_runtime.cc:118] Executing program {step} on 32 cores",
    "W{md} {hms}.{us:06d} 140136352118592 input_pipeline.cc:77] Input pipeline took {ms} ms for step {step}",
    "I{md} {hms}.{us:06d} 140136352118592 profiler.py:90] Memstats: Using (GB) 44.63 / 95.74 on TPU_{ms}",
    "I{md} {hms}.{us:06d} 140136352118592 grain_pool.py:412] Grain pool is serving {ms} elements per second",
)
STEP = ("I{md} {hms}.{us:06d} 140136352118592 metric_logger.py:226] completed step: {step}, seconds: 1.000, "
        "TFLOP/s/device: 134.9, Tokens/s/device: 8672.7, total_weights: 196608, loss: 3.{ms:03d}")
INFERRED_STEP = ("{date} | INFO | train_inner | epoch 001: {step} / 999999 loss=3.{ms:03d}, ppl=8.1, wps=52.5, "
                 "ups=1.0, num_updates={step}, lr=1e-05, gnorm=2.2, train_wall=1, wall={t}")
"""--form inferred: fairseq's train_inner line, which no known form reads (the reader infers its clock and steps)."""
T0 = 1723543200  # 2024-08-13 10:00:00 UTC


def _hms(t: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(T0 + t))


def _md(t: int) -> str:
    return time.strftime("%m%d", time.gmtime(T0 + t))


def _date(t: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(T0 + t))


def _iso(t: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 + t))


def generate(path: str, size_bytes: int, form: str = "maxtext") -> None:
    written, step = 0, 0
    restarted = False
    with open(path, "w", encoding="utf-8") as out:
        out.write(f"XPK Start: {_date(0)}\n")
        out.write(f"I{_md(20)} {_hms(20)}.000000 140 max_utils.py:95] System Information: Jax Version: 0.4.31\n")
        out.write(f"I{_md(60)} {_hms(60)}.000000 140 max_utils.py:97] System Information: Jax Backend: PJRT C API\n")
        t = 180
        while written < size_bytes:
            chunk = []
            for _ in range(2000):
                hms, md = _hms(t), _md(t)
                for k, noise in enumerate(NOISE * 4):
                    chunk.append(noise.format(md=md, hms=hms, us=k * 1000, step=step, ms=(step * 7 + k) % 997))
                if form == "inferred":
                    chunk.append(INFERRED_STEP.format(date=_iso(t), step=step, ms=step % 997, t=t))
                else:
                    chunk.append(STEP.format(md=md, hms=hms, us=900000, step=step, ms=step % 997))
                if step and step % 500 == 0:
                    chunk.append(f"I{md} {hms}.950000 140 event_tracking.py:70] [process=0] [async] Started save "
                                 f"checkpoint @ gs://bench/run/checkpoints/{step}.")
                    chunk.append(f"I{md} {hms}.990000 140 event_tracking.py:125] [process=0] [async] Finished "
                                 f"blocking save in 0.04 seconds. Continuing save @ gs://bench/run/checkpoints/{step}.")
                step += 1
                t += 1
            text = "\n".join(chunk) + "\n"
            out.write(text)
            written += len(text)
            if not restarted and written >= size_bytes // 2:
                restarted = True
                out.write("jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: Socket closed\n")
                out.write(f"XPK End: {_date(t)}\nEXIT_CODE=1\n")
                t += 120
                out.write(f"XPK Start: {_date(t)}\n")
                restored = step - step % 500 - 500  # the last save before the failure
                out.write(f"I{_md(t + 60)} {_hms(t + 60)}.000000 140 checkpointing.py:480] restoring from this run's "
                          f"directory step {restored}\n")
                step, t = restored + 1, t + 180


READ = """
import gc, json, resource, sys, time
from tpudoctor.commands.goodput_cmd import PRODUCT
from tpudoctor.goodput.analyze import analyze_paths
if getattr(PRODUCT, "pause_gc", False):  # as ``tpudoctor goodput`` runs it
    gc.disable()
t0 = time.perf_counter()
doc = analyze_paths([sys.argv[1]], year=2024)
g = doc["goodput"]
print(json.dumps({"wall_s": time.perf_counter() - t0,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "lines": doc["sources"][0]["lines"], "steps": g["steps"], "restarts": g["restarts"],
                  "repeated_steps": g["repeated_steps"], "saves": g["checkpoint_saves"], "ettr": g["ettr"],
                  "job_wall_s": g["wall_s"], "median_step_s": g["median_step_s"], "notes": g["notes"]}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--path", default=None, help="log file to read/generate (default: in the temp dir)")
    parser.add_argument("--form", choices=("maxtext", "inferred"), default="maxtext",
                        help="the step lines: MaxText's (a known form) or fairseq's (inferred from the log)")
    args = parser.parse_args()
    suffix = "" if args.form == "maxtext" else f"_{args.form}"
    path = args.path or os.path.join(tempfile.gettempdir(), f"tpudoctor_goodput_{args.size_mb}mb{suffix}.log")
    size = args.size_mb * 1024 * 1024
    if not os.path.exists(path) or os.path.getsize(path) < size:
        t0 = time.perf_counter()
        generate(path, size, args.form)
        print(f"generated {path} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    baseline = subprocess.run([sys.executable, "-c", "import resource, tpudoctor.goodput.analyze; "
                               "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)"],
                              capture_output=True, text=True, check=True)
    result = json.loads(subprocess.run([sys.executable, "-c", READ, path], capture_output=True, text=True,
                                       check=True).stdout)
    file_bytes = os.path.getsize(path)
    print(f"file               {file_bytes / 2**20:,.0f} MiB, {result['lines']:,} lines")
    print(f"wall time          {result['wall_s']:.1f} s ({file_bytes / 2**20 / result['wall_s']:.1f} MiB/s)")
    print(f"peak RSS           {result['peak_rss_bytes'] / 2**20:.1f} MiB "
          f"(import alone: {int(baseline.stdout) / 2**20:.1f} MiB)")
    print(f"job                {result['steps']:,} steps, {result['restarts']} restart(s), "
          f"{result['repeated_steps']} redone, {result['saves']} saves, ETTR {result['ettr']}, "
          f"median step {result['median_step_s']} s over {result['job_wall_s']:,.0f} s")
    for note in result["notes"]:
        print(f"note               {note}")


if __name__ == "__main__":
    main()
