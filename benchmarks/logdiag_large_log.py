"""Scan a large generated log with tpudoctor.logdiag and print wall time and peak memory.

    python benchmarks/logdiag_large_log.py            # 1 GiB in /tmp (generated once, reused)
    python benchmarks/logdiag_large_log.py --size-mb 100

The scan runs in a fresh subprocess so its peak RSS is its own, not the generator's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

NOISE = (
    "2024-05-01 10:{m:02d}:{s:02d},{ms:03d} INFO trainer.py:212] step {step} loss={loss:.4f} lr=3.0e-04 tokens/s=181234",
    "I0501 10:{m:02d}:{s:02d}.{ms:03d}000  4242 tpu_runtime.cc:118] Executing program {step} on 8 cores",
    "Epoch {step}: 100%|##########| 500/500 [01:02<00:00,  8.01it/s, loss={loss:.3f}]",
    "W0501 10:{m:02d}:{s:02d}.{ms:03d}000  4242 input_pipeline.cc:77] Input pipeline took {ms} ms for step {step}",
)
FAILURE = """\
Traceback (most recent call last):
  File "/home/me/train.py", line 88, in <module>
    state = train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.
"""


def generate(path: str, size_bytes: int) -> None:
    rng = random.Random(0)
    written = 0
    step = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size_bytes:
            chunk = []
            for _ in range(10000):
                step += 1
                line = NOISE[step % len(NOISE)].format(
                    m=step // 60 % 60, s=step % 60, ms=rng.randrange(1000), step=step, loss=rng.random()
                )
                chunk.append(line)
            if step % 1_000_000 == 0:
                chunk.append("W0501 10:00:01.000000  4242 cloud_tpu_init.py:80] Transparent hugepages are not enabled.")
            text = "\n".join(chunk) + "\n"
            out.write(text)
            written += len(text)
        out.write(FAILURE)


SCAN = """
import json, resource, sys, time
from tpudoctor.logdiag import Diagnoser
t0 = time.perf_counter()
from tpudoctor.logdiag.reading import feed_path
d = Diagnoser()
feed_path(d, sys.argv[1])  # what check --log-file reads a file with
found = d.diagnoses()
print(json.dumps({
    "wall_s": time.perf_counter() - t0,
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "lines": d.lines_scanned, "events": d.events_scanned,
    "diagnoses": [(x.id, x.evidence["count"], x.evidence["first_line_no"]) for x in found],
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--path", default=None, help="log file to scan/generate (default: in the temp dir)")
    args = parser.parse_args()
    path = args.path or os.path.join(tempfile.gettempdir(), f"tpudoctor_bench_{args.size_mb}mb.log")
    size = args.size_mb * 1024 * 1024
    if not os.path.exists(path) or os.path.getsize(path) < size:
        t0 = time.perf_counter()
        generate(path, size)
        print(f"generated {path} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    baseline = subprocess.run([sys.executable, "-c", "import resource, tpudoctor.logdiag; "
                               "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)"],
                              capture_output=True, text=True, check=True)
    result = json.loads(subprocess.run([sys.executable, "-c", SCAN, path], capture_output=True,
                                       text=True, check=True).stdout)
    file_bytes = os.path.getsize(path)
    print(f"file               {file_bytes / 2**20:,.0f} MiB, {result['lines']:,} lines, {result['events']:,} events")
    print(f"wall time          {result['wall_s']:.1f} s ({file_bytes / 2**20 / result['wall_s']:.1f} MiB/s)")
    print(f"peak RSS           {result['peak_rss_bytes'] / 2**20:.1f} MiB "
          f"(import alone: {int(baseline.stdout) / 2**20:.1f} MiB)")
    print(f"diagnoses          {result['diagnoses']}")
    _ = resource  # imported for the subprocess recipe above


if __name__ == "__main__":
    main()
