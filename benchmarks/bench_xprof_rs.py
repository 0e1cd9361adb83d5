"""``tpudoctor profile analyze`` beside xprof-rs (a Rust reader of XSpace captures, ``pip install xprof-rs``), whole
processes side by side on the same capture, paired runs in alternating order, medians.

    .venv/bin/python benchmarks/bench_xprof_rs.py [FILE.xplane.pb] [--pairs 5]

Default FILE: the shared multi-worker GPU capture with every line's events repeated 30 times (57 MB, 693,840
events; ``make_big_capture.py``). Per pair: the tpudoctor command with the compiled decoder (``auto``; its cache
is built by one unmeasured run first), the same with the numpy decoder, and ``xprof-rs get_overview SESSION``
(xprof-rs started fresh, reading the file and answering the overview page), and the floor: a Python process
that imports numpy and pandas as the command's process does (one BLAS thread, pyarrow left out) and does nothing
else (``--no-floor`` leaves it out). xprof-rs is not a dependency of
tpudoctor: where it is not installed, its column is skipped, saying so. Prints the load average before and after,
and per contender the cores other work kept busy during its runs (``other``, from ``/proc/stat``): on this shared
2-core machine that decides the figures more than the load average does (xprof-rs runs on both cores: 0.11-0.13 s
with the other core idle, 0.19-0.46 s beside a busy one). Where only some pairs were quiet (other work under 0.15
cores in every run), their medians are printed again on their own.
``--baseline CHECKOUT`` adds an older checkout's tpudoctor (``git worktree add /tmp/old COMMIT``) to the pairs.

Measured 2026-12-05 on the shared 2-core machine (6 sessions at once; load averages as printed), xprof-rs 0.1.3:

Where the 0.76 s of ``profile analyze`` on the 57 MB capture went before (commit 1f11913; load 0.2-0.5;
``python -X importtime``, ``bench_profile_phases.py``, cProfile): imports 0.42 s, of which pandas 0.23 s (numpy
0.06 s and pyarrow 0.04-0.06 s inside it), jsonschema 0.02 s (the report's schema check), tpudoctor.cli 0.03 s,
llvmlite 0.013 s (loads the cached decoder); loading 0.27 s (the compiled kernel 0.06-0.09 s, the str stat
columns 0.075 s: a Python string then a code per stat, the file's read and parse 0.03-0.05 s); the analyses 0.10 s;
preparing, validating and writing the report 0.06 s. Python with pandas imported alone takes 0.30 s here, which
is already about 2x xprof-rs's whole run (0.12-0.17 s quiet): the 2.0x bar cannot be met while the analyses are
pandas code.

After (str columns coded per distinct value, integer columns stored without conversion, plane-by-plane reading
from 16 MB), 9 pairs, load average 1.39 -> 1.75::

                                      wall s (median)  peak RSS MB  x xprof-rs
    tpudoctor (compiled decoder)                 0.79          248       3.70x
    tpudoctor at 1f11913 (before)                0.93          300       4.25x
    xprof-rs get_overview                        0.22          234

(an earlier run at load 0.5, before: tpudoctor 0.76 s, xprof-rs 0.12 s, 5.95x.) The x50 v6e capture (40 MB),
7 pairs at load 1.6-1.75: 0.85 s before and after (median), peak RSS 286 -> 278 MB; its JSON report is
byte-identical (``check_profile_reports.py``). The 1 GB capture (``capture_memory.py``), 2 pairs at load 1.6-2.2:
15.6, 15.7 s before, 14.0, 18.0 s after, peak RSS 2.69 GB both: the decode is 3-4 s of it, the tables left after
loading 1.85 GB (51 bytes per event, 36 M events) and the peak (2.6 GB) is reached inside the analyses
(``analyze_device_ops``), not the loader.

The loader's tables narrowed and its walk sped up (2026-12-05 evening, commits after 0ab43d1, against a worktree of
0ab43d1 in the same pairs; the machine shared, load average 1.8-3.5 throughout, so wall times are noisy):

* 57 MB GPU capture, the load alone in process (``decode_host_file``, analysis stats, CPU time, best of 3 per
  process, 6 processes each, alternating; load 3.1-3.4): 0.140-0.155 s (median 0.147) against 0.177-0.197 s
  (0.188) before; the x50 v6e capture 0.138-0.151 s (0.144) against 0.145-0.160 s (0.158). Of
  what is left, the compiled kernel 0.065 s, the file's reads 0.028 s, the metadata headers 0.034 s, the str stat
  columns 0.020 s (cProfile). Gone: the plane layout's seek and 20-byte read per field (21,857 of them, 0.035 s,
  now 0.006 s from a 64 KB window, the metadata entries walked in place) and the join of each batch's lines
  into one copy for its stat texts (0.016 s; texts are read from each line's bytes).
* 57 MB, whole process (this script, ``--no-numpy --baseline``), 9 pairs each time: at load 1.88 -> 1.76, with
  the narrower columns and line texts only, 0.75 s and 0.75 s at 0ab43d1, xprof-rs 0.11 s (6.16x and 6.45x); at
  load 2.95 -> 3.26, with the plane lookup too, 1.21 s against 1.49 s, xprof-rs 0.35 s (3.43x and 3.62x); final,
  at load 3.78 -> 10.52, 0.77 s against 0.86 s, xprof-rs 0.20 s (3.92x and 4.12x), peak RSS 230 MB against 234. The
  load is 0.15 s of the ~0.75 s process: the imports (pandas 0.14-0.23 s) and the analyses are the rest, so the
  2.0x bar is out of the loader's reach.
* Tables: the events' plane_id int8 (int16 from 127 planes) with plane_name's codes that same array where plane
  names are distinct, metadata_id int16 where it fits, label stats (``LABEL_STATS``: step_num, group_id...) in
  the narrowest type that holds them: bytes per event of the columns (``capture_memory.table_bytes``) for
  ``profile analyze``'s stats 61 -> 57 (v6e), 45 -> 34 (GPU), with every stat 137 -> 105 and 109 -> 70. What is
  left on the v6e capture is 64 bits by range: start_ps (to 4.6e15 ps on x50), duration_ps (steps: 4.05e12),
  program_id (fingerprints, 1.2e19), device_offset_ps (9.8e13), device_duration_ps (1.9e11) - 8 or 9 bytes each,
  45 of the 57.
* x50 v6e (40 MB) against xprof (``bench_profile_load.py --scales 50 --pairs 3``, load 1.2-2.1): 0.80 s, 14.16x
  (12.47-15.57) against 0.80 s, 14.18x (12.87-15.54) at 0ab43d1; analyze() alone 0.46 s and 0.44 s. The 64-host
  logdir of x10 copies: 9.3 s against 11.2 s, parent peak RSS 131 MB both. JSON reports byte-identical on every
  shared capture, the 57 MB and the x50 ones, both decoders and 0ab43d1 (``check_profile_reports.py``).
* 1 GB capture (36,076,050 events; ``capture_memory.py --sizes-mb 1024 --stats analysis``, load 2-3.4): the
  tables 2.20 -> 2.13 GB nominal (61 -> 59 bytes per event; the planes repeat 26 times, so plane_id stays int16),
  RSS after loading 1.95 -> 1.87 GB, the load's peak 2.17 -> 1.91 GB (an int8 -> int64 conversion of every
  event's plane in a searchsorted is gone, the events' line rows int16 while they decode); the load's CPU time, 5 alternating pairs at load 3.1-3.9: 3.55-5.44 s
  (median 4.85) against 4.21-6.55 s (5.66), wall 4.4-8.8 s against 4.9-12.8 s (the compiled kernel is 3.5-3.8 s
  of it, most of the rest first writes to the columns' pages). Whole ``profile analyze``, 2 pairs: 19.3 and 15.1 s against 21.6 and 15.8 s, peak RSS
  2.60-2.62 GB against 2.67-2.68 GB, the peak inside the analyses.

Importing pandas beside the decode, tried and taken out (the loader, ``op_trace`` and what ``profile analyze``
imports before the decode import no pandas since 861a780; a thread imported it while the decoder ran, and left a
traceback at shutdown where the command exits early, e.g. ``--cluster`` without Dask). The decoder's kernels release the GIL but they are 0.06-0.09 s of the 0.27 s load; the rest holds it, so
under ``-X importtime`` pandas' import took 0.33 s instead of 0.23 s and was done before the decode was (0.47 s
in). Whole process on the 57 MB capture, alternating pairs, same tree with and without the thread: 8 pairs at
load 1.6 -> 1.5, median 0.80 s vs 0.81 s; 12 pairs at load 1.4 -> 1.45, 0.86 s vs 0.90 s. Against main's venv
(10 pairs, load 1.76 at the end): 0.83 s vs 0.835 s, peak RSS 254 vs 253 MB. A win of 0.01-0.04 s, within the
load's noise, not worth a thread: the 2.0x bar needs the analyses off pandas, not a reordered import. JSON report identical but for
``duration_s``.

The whole process, what is not the work (issue 44, 2026-12-05 evening; commits after fa2e89a, against a worktree of
fa2e89a in the same pairs, JSON report to /dev/null as the issue runs it; ``CPU s`` the process's user and system
time, which the other sessions' work moves less than the wall):

* Cut: pyarrow out of the command's process for an XSpace capture (pandas 3 imports it, 0.02 s, and keeps every
  string column it makes in pyarrow, converting each from Python strings, 0.02 s more; pyarrow is optional, for op
  traces, which keep it; peak RSS 220 -> 176 MB); the collector left off after the run (turned on again, its
  first pass went over everything the run left, 0.02 s, right before ``os._exit``); one scan of the installed
  distributions' entry points instead of two, and tpudoctor's own told apart without parsing its METADATA (the
  rule registry's load, CPU 13 -> 9 ms); the report's schema check by jsonschema-rs first (jsonschema's import,
  attrs, referencing and every draft's meta-schema read from disk, 0.02-0.03 s; jsonschema still judges whatever
  jsonschema-rs does not accept, and every report read from a file); numpy's OpenBLAS told to start no threads
  (one per core, up to 64, spinning for work the analyses never give: ``import numpy`` on a 16-core machine
  CPU 2.25 -> 0.32 s, wall 0.379 -> 0.325 s; on this 2-core one CPU 97 -> 57 ms, and the spinning thread took the
  main thread's core). Every JSON report byte-identical (``check_profile_reports.py``: the shared captures, x50,
  gpu30, both decoders and fa2e89a).
* Each step, 57 MB capture, 9 alternating pairs, load 3.1 -> 2.8, paired median against fa2e89a (wall 0.64 s,
  CPU 0.62 s): pyarrow and collector -56 ms, entry points -69, jsonschema-rs -93, OpenBLAS -145 ms (wall 0.49 s,
  CPU 0.48 s); xprof-rs 0.15-0.34 s in the same pairs. This script, 11 pairs, load 4.2 -> 3.7: 0.50 s (CPU 0.48 s)
  against 0.60 s (CPU 0.67 s) at fa2e89a, xprof-rs 0.16 s (CPU 0.18 s): 3.09x against 4.68x, peak RSS 176 against
  220 MB (xprof-rs 231). With main's loader and decoder changes of the same evening merged (c716084), this script,
  11 pairs, load 3.3 -> 3.1: 0.47 s (CPU 0.46 s) against 0.61 s (CPU 0.69 s), xprof-rs 0.17 s (CPU 0.25 s): 2.81x
  against 3.55x; and 11 alternating pairs of fa2e89a, c716084 (main without these cuts) and this tree, load
  4.1 -> 3.6: 0.63, 0.68 and 0.46 s (CPU 0.63, 0.64, 0.46 s), paired against fa2e89a -8 and -172 ms.
* What is left of the 0.50 s (7 runs under ``-X importtime``, which adds ~0.03 s; load 3.6): Python's start 0.02 s
  (``site`` 9 ms, 7 of them the editable install's finder, which a wheel install has not); ``tpudoctor.cli`` and
  every command's module 0.02 s; the flags, the settings (this repository's pyproject.toml parsed, 6 ms) and the
  rule base 0.02 s; the command's own modules 0.01 s; numpy 0.03-0.07 s and protobuf (the decoder's XSpace
  headers) 0.01-0.02 s; pandas 0.09 s and llvmlite (loading the cached kernels) 0.015 s; the decode 0.16-0.19 s;
  the analyses 0.08 s (0.01 s of it their imports; 0.05-0.06 s a second time in the same process, 0.01 s on a
  68 KB capture); the combine 0.015 s (the rules' imports and the entry points' scan 0.01 s); the report (check,
  JSON, write) 0.007 s.
* The bar: 2.0x of xprof-rs's 0.11-0.16 s is 0.22-0.32 s. Python with numpy and pandas (no pyarrow) imported
  and nothing done takes 0.19 s (10 alternating pairs at load 2.4 -> 2.7, CPU median 0.195 s, best wall 0.19 s;
  ``-c pass`` 0.016 s, ``import numpy`` 0.06 s, pandas with pyarrow 0.28 s; xprof-rs's whole run CPU 0.19 s):
  with the decode (0.16 s) that is 0.35 s, 2.2-3.2x, before any analysis runs. The bar is out of reach while
  the analyses are pandas code; what is left besides Python, numpy, pandas and the decode is about 0.1 s of
  tpudoctor's own imports and the analyses' fixed costs, and the analyses' work.
* Tried and left out: building only the invoked command's parser (the other command modules not imported) saved
  2 ms of CPU (12 pairs, small capture); the collector off from the process's start saves ~2 ms (27 collections
  before the run); pyproject.toml's parse (6 ms, a folder with a pyproject.toml that has no ``[tool.tpudoctor]``)
  cannot be skipped on a cheap look at the text without risking a table spelled with escapes.

Beside the import, and each line read once (issue 44, 2026-12-05 night; commits after 9cd47f9, against a worktree
of 9cd47f9 = main in the same alternating pairs):

* pandas imported by a thread while the command's thread loads the capture (``captures.xspace.overlap``), where
  two cores are free this instant (affinity and ``/proc/loadavg``'s running tasks): the kernel and the file's
  reads let the GIL go, the import holds it. And the lines read for the decoder's headers kept for its events,
  up to 64 MB (``planes_on_disk.HELD_LINES_BYTES``): the 57 MB capture is read from the file once (the load's CPU
  0.167 -> 0.155 s). 24 alternating pairs, all quiet (load 1.50 -> 1.44): 9cd47f9 0.452 s, this tree 0.406 s (-49 ms
  paired; CPU 0.450 -> 0.468 s, peak RSS 168 -> 191 MB: the import's memory and the load's at once), this tree
  with the thread forced off 0.441 s (-14 ms: the lines read once). Beside a busy core the thread is left off:
  10 such pairs, 0.464 s at 9cd47f9, 0.454 s here (-12 ms); 24 such pairs of this tree, the thread forced off
  0.475 s, left to decide -4 ms, forced on +16 ms. This script, 15 pairs (load 1.39 at the end), its 7 quiet
  pairs: 0.408 s against 0.450 s at 9cd47f9, xprof-rs 0.134 s (0.11-0.23, CPU 0.21 s): 3.05x against 3.33x, peak
  RSS 190 against 168 MB (xprof-rs 227); all 15 (other work in some): 0.424 and 0.457 s, xprof-rs 0.194 s, 2.08x
  and 2.36x. Beside busy cores the ratio falls (21 pairs, other work ~1 core throughout: 0.481 and 0.473 s
  against xprof-rs 0.278 s, 1.87x and 1.93x) because xprof-rs loses its second core, not because tpudoctor is
  quicker.
  JSON reports byte-identical (``check_profile_reports.py`` with gpu30, both decoders, against 9cd47f9; the
  thread forced on and off).
* Measured and left out: the threaded decode on two cores (one decoding thread beside this one, with or without
  the import beside it): quiet -2 ms, beside a busy core +24 ms; with the import +44 ms there. The import started
  earlier (at ``build_report``, numpy and the protobuf, llvmlite imports still to come) -2 to -12 ms: those hold the
  GIL too; the analyses' modules imported with pandas: no more than pandas alone (-33 ms both); a shorter switch
  interval (1 ms) while both threads run: the same -32 ms. The flags, settings, report path: the command's skeleton
  against calling ``profile.product.run`` directly (GC off both) costs 17-25 ms of CPU, nearly all of it modules
  the run imports anyway (``hashlib`` for the decoder's cache key, ``socket`` for ``importlib.metadata``'s email
  parser, ``shutil`` for ``tempfile``); what is left is the gcp session's endpoints (2-3 ms) and pyproject.toml.
* The floor (10-12 alternating pairs, their quiet ones, this machine): ``python -c pass`` 0.017 s, ``import numpy``
  0.062 s, numpy and pandas (no pyarrow) 0.210 s, with protobuf and llvmlite 0.233 s; xprof-rs's whole run
  0.107-0.144 s, so the 2.0x bar is 0.22-0.29 s: the imports the work cannot go without are that already. With
  pandas' import beside the load, what holds the GIL, one part after another, is Python's start, tpudoctor's own
  modules, the flags and settings (~0.08 s), numpy, protobuf and llvmlite (~0.07 s), pandas' import (0.15 s once
  numpy is in; the load's 0.13 s goes under it where a core is free), the tables, the analyses (0.08 s) and the
  report (0.02 s): ~0.40 s even with a load that took no time, 3x xprof-rs. The 2.0x bar needs the analyses off
  pandas (and pandas not imported), not a quicker load or a leaner command.
* 2026-12-05 22:11 UTC, main at 2deea54 (the line columns kept once per line, pandas imported beside the load)
  against 03a1ec9, with the floor as its own row, 12 pairs, all quiet (``other`` 0.0): tpudoctor 0.424 s, 190 MB
  (2.86x); 03a1ec9 0.481 s, 175 MB (3.23x); the floor 0.213 s, 67 MB (1.44x); xprof-rs 0.151 s (0.11-0.25), 232
  MB. An earlier run of 12 pairs (22:00 UTC, no floor row): 0.442 s against 0.500 s, xprof-rs 0.164 s (2.69x
  against 3.05x).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_profile_load import GNU_TIME, child_environment  # noqa: E402

GPU_CAPTURE = REPO.parent / "shared" / "data" / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"
TPUDOCTOR = [sys.executable, "-m", "tpudoctor"]


def default_capture() -> Path:
    from benchmarks.make_big_capture import scale_capture

    target = Path(tempfile.gettempdir()) / "tpudoctor-bench" / "gpu_x30" / "gpu_x30.xplane.pb"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        scale_capture(GPU_CAPTURE, 30, target)
    return target


def xprof_rs() -> str | None:
    beside = Path(sys.executable).parent / "xprof-rs"
    return str(beside) if beside.exists() else shutil.which("xprof-rs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also run the tpudoctor of this checkout (e.g. a `git worktree add` of an older commit)")
    parser.add_argument("--no-numpy", action="store_true", help="leave out the numpy decoder's column")
    parser.add_argument("--no-floor", action="store_true", help="leave out the import floor's row")
    args = parser.parse_args()
    path = args.capture or default_capture()
    session = Path(tempfile.mkdtemp(prefix="xprof-rs-session-"))
    (session / path.name).symlink_to(path.resolve())
    rust = xprof_rs()
    contenders = {
        "tpudoctor (compiled decoder)": lambda: _tpudoctor(path, "auto"),
        "tpudoctor (numpy decoder)": lambda: _tpudoctor(path, "numpy"),
    }
    if args.no_numpy:
        contenders.pop("tpudoctor (numpy decoder)")
    if args.baseline:
        contenders[f"tpudoctor at {args.baseline.name}"] = lambda: _tpudoctor(path, "auto", checkout=args.baseline)
    if not args.no_floor:  # what no tpudoctor run goes below while its analyses are pandas code
        contenders[FLOOR] = lambda: run_process([sys.executable, "-c", FLOOR_CODE])
    if rust:
        contenders["xprof-rs get_overview"] = lambda: run_process([rust, "get_overview", str(session)])
    else:
        print("xprof-rs is not installed (pip install xprof-rs): its column is skipped")
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB), {args.pairs} pairs, load average before: {_load()}")
    _tpudoctor(path, "jit")  # unmeasured: builds the decoder's machine code cache where it is not yet
    for run in contenders.values():
        run()  # unmeasured: page cache, bytecode
    results: dict[str, list[dict]] = {name: [] for name in contenders}
    for index in range(args.pairs):
        for name in (list(contenders) if index % 2 == 0 else list(reversed(contenders))):
            result = contenders[name]()
            if "error" in result:
                raise SystemExit(f"{name}: {result['error']}")
            results[name].append(result)
    print(f"load average after: {_load()}")
    _table(results, rust is not None)
    quiet = [index for index in range(args.pairs)
             if all(runs[index]["other_cores"] < QUIET_CORES for runs in results.values())]
    if quiet and len(quiet) < args.pairs:
        print(f"the {len(quiet)} pairs in which other work kept under {QUIET_CORES} cores busy in every run:")
        _table({name: [runs[index] for index in quiet] for name, runs in results.items()}, rust is not None)
    return 0


FLOOR = "python, numpy, pandas (floor)"
# as the command's own process imports them (``tpudoctor.command_process``): one BLAS thread, pyarrow left out
FLOOR_CODE = ("import os, sys; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); sys.modules['pyarrow'] = None; "
              "import numpy, pandas")
QUIET_CORES = 0.15  # a pair counts as quiet where other work kept fewer cores than this busy in each of its runs


def _table(results: dict[str, list[dict]], rust: bool) -> None:
    """Medians per contender; ``other``: the cores other work kept busy, median over the runs."""
    print(f"{'':32} {'wall s (median)':>16} {'CPU s':>6} {'peak RSS MB':>12} {'x xprof-rs':>11} {'other':>6}")
    for name, runs in results.items():
        wall = statistics.median(r["process_s"] for r in runs)
        cpu = statistics.median(r["process_cpu_s"] for r in runs)
        rss = statistics.median(r["process_rss_mb"] for r in runs)
        other = statistics.median(r["other_cores"] for r in runs)
        ratio = ""
        if rust and name != "xprof-rs get_overview":
            pairs = [a["process_s"] / b["process_s"] for a, b in zip(runs, results["xprof-rs get_overview"], strict=True)]
            ratio = f"{statistics.median(pairs):.2f}x"
        print(f"{name:32} {wall:16.3f} {cpu:6.3f} {rss:12.0f} {ratio:>11} {other:6.1f}  runs: {_seconds(runs)}")


def run_process(argv: list[str], *, cwd: Path = REPO) -> dict:
    """A fresh process: ``process_s`` (spawn to exit), ``process_cpu_s`` (its user and system time, all threads:
    less moved by other work on a shared machine than the wall), ``process_rss_mb`` (peak RSS, ``/usr/bin/time``),
    ``other_cores`` (the cores that other work kept busy meanwhile, on average: the machine's busy time from
    ``/proc/stat`` less the process's own CPU, over its wall; NaN where there is no /proc/stat); ``error`` unless
    it ends 0 or 1 (1: the report has findings)."""
    import resource
    import subprocess
    import time

    with tempfile.NamedTemporaryFile("r", prefix="bench-rss-") as rss:
        timed = [str(GNU_TIME), "-f", "%M", "-o", rss.name] if GNU_TIME.exists() else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy_before = _machine_busy_s()
        started = time.perf_counter()
        done = subprocess.run([*timed, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=900, cwd=cwd, env=_environment(cwd))
        elapsed = time.perf_counter() - started
        busy_after = _machine_busy_s()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        measured = rss.read().strip()
    if done.returncode not in (0, 1):
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:160]}
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"process_s": elapsed, "process_cpu_s": cpu,
            "process_rss_mb": int(measured.splitlines()[-1]) / 1024 if measured else float("nan"),
            "other_cores": max(0.0, (busy_after - busy_before - cpu) / elapsed)}


def _machine_busy_s() -> float:
    """Seconds all cores have spent busy since boot (``/proc/stat``: all but idle and iowait); NaN without it."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(value) for value in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return float("nan")
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _environment(cwd: Path) -> dict[str, str]:
    env = child_environment()
    if cwd != REPO:  # another checkout's tpudoctor, not this one's editable install
        env["PYTHONPATH"] = str(cwd)
    return env


def _tpudoctor(path: Path, decoder: str, checkout: Path = REPO) -> dict:
    env_before = os.environ.get("TPUDOCTOR_PROFILE_DECODER")
    os.environ["TPUDOCTOR_PROFILE_DECODER"] = decoder
    try:
        # JSON: as issue 44 measures it; and the text views (tpudoctor.reports) of an editable install resolve to
        # this checkout's reports/ from any other checkout
        return run_process([*TPUDOCTOR, "profile", "analyze", str(path), "--format", "json", "-o", os.devnull],
                           cwd=checkout)
    finally:
        if env_before is None:
            os.environ.pop("TPUDOCTOR_PROFILE_DECODER")
        else:
            os.environ["TPUDOCTOR_PROFILE_DECODER"] = env_before


def _seconds(runs: list[dict]) -> str:
    return ", ".join(f"{run['process_s']:.2f}" for run in runs)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
