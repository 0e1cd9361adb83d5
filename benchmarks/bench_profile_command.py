"""Where the whole ``tpudoctor profile analyze FILE`` command spends its time, stage by stage.

    .venv/bin/python benchmarks/bench_profile_command.py [FILE.xplane.pb] [--runs 5] [--format text]

Each run is a fresh interpreter that goes through the command's own stages in order and times each:
interpreter start (spawn to the first line of the child), the CLI's imports and parser, the settings,
the imports of the analysis (numpy, pandas, the decoder and the analyzers: what ``analyze()`` imports on
its first call), ``analyze()`` itself, the document (``tpudoctor.documents.profile_document``: schema
import and validation), the renderer and the write. Prints each stage's median over the runs and the
whole, beside the real command's wall time (``tpudoctor profile analyze FILE -o /dev/null``), so the
stages can be checked to add up. Default FILE: the x50 capture ``bench_profile_load.py`` builds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_FILE = Path(tempfile.gettempdir()) / "tpudoctor-bench" / "x50" / "xprof_tpu_inference_2_x50.xplane.pb"
TPUDOCTOR = Path(sys.executable).parent / "tpudoctor"

CHILD = r"""
import time, json, sys
marks = [("start", time.perf_counter())]
def mark(name):
    marks.append((name, time.perf_counter()))
from tpudoctor import cli
parser = cli.build_parser()
args = parser.parse_args(["profile", "analyze", sys.argv[1], "--format", sys.argv[2], "-o", "/dev/null"])
mark("CLI imports and parser")
settings = cli._settings_for(args)
mark("settings")
import tpudoctor.profile.capture, tpudoctor.profile.pipeline, tpudoctor.profile.analysis  # noqa: E401
mark("analysis imports (numpy, pandas, decoder, analyzers)")
from tpudoctor.profile.product import build_report
report = build_report(args.path)
mark("analyze()")
from tpudoctor.documents import profile_document
document = profile_document(report)
mark("document (schema import, validation)")
from tpudoctor.rendering import render
text = render(document, args.format)
mark("render")
from tpudoctor.output import write_text
write_text(args.output, text)
mark("write")
print(json.dumps([(name, t) for name, t in marks]), flush=True)
import atexit, os  # then end as the tpudoctor command does (tpudoctor.cli.run): no teardown of every object
atexit._run_exitfuncs()
os._exit(0)
"""


def one_run(path: Path, fmt: str) -> dict[str, float]:
    spawned = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt], capture_output=True, text=True, check=True)
    ended = time.perf_counter()
    marks = json.loads(proc.stdout.strip().splitlines()[-1])
    # perf_counter is one clock for both processes on Linux (CLOCK_MONOTONIC)
    stages = {"interpreter start": marks[0][1] - spawned}
    for (_, before), (name, after) in zip(marks, marks[1:], strict=False):
        stages[name] = after - before
    stages["exit"] = ended - marks[-1][1]
    stages["whole"] = ended - spawned
    return stages


def command_wall(path: Path, fmt: str) -> float:
    started = time.perf_counter()
    subprocess.run([str(TPUDOCTOR), "profile", "analyze", str(path), "--format", fmt, "-o", "/dev/null"], check=True,
                   capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--format", default="text")
    options = parser.parse_args()
    if not options.file.exists():
        sys.exit(f"{options.file} is missing: build it with benchmarks/bench_profile_load.py --scales 50")
    one_run(options.file, options.format)  # warm: bytecode and page cache, as for a user's second run
    runs, walls = [], []
    for _ in range(options.runs):
        runs.append(one_run(options.file, options.format))
        walls.append(command_wall(options.file, options.format))
    print(f"{options.file.name} ({options.file.stat().st_size / 1e6:.1f} MB), --format {options.format}, "
          f"medians of {options.runs} runs")
    for stage in runs[0]:
        values = [run[stage] for run in runs]
        share = statistics.median(values) / statistics.median([run["whole"] for run in runs])
        print(f"  {stage:<55} {statistics.median(values):6.3f} s  {share:6.1%}")
    print(f"  {'the real command (tpudoctor profile analyze -o /dev/null)':<55} {statistics.median(walls):6.3f} s")


if __name__ == "__main__":
    main()
