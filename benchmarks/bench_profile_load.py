"""Speed and memory of `tpudoctor profile analyze` against xprof's own converter, on captures of growing size.

    .venv/bin/python benchmarks/bench_profile_load.py          # x1, x10, x50 and 1 GB, 5 pairs each, then a 64-host logdir
    .venv/bin/python benchmarks/bench_profile_load.py [--source X.xplane.pb] [--scales 1,10,50] [--sizes-mb 1024]
        [--pairs 5] [--hosts 64] [--skip-xprof] [--input-pipeline]

Builds larger captures from a real one (every line's events repeated N times, shifted in time;
x50 of the v6e capture is about 40 MB and 1.3 M events) under /tmp/tpudoctor-bench, then, on each
capture, runs ``--pairs`` pairs of fresh processes, the order within a pair alternating (so a
machine that is busier for a while slows both sides alike), and prints the medians:

* **whole process**: the ``tpudoctor profile analyze FILE`` command (text report to /dev/null) as a
  user runs it, interpreter start, imports and rendering included, against xprof's converter process
  (a Python process that imports ``xprof.convert._pywrap_profiler_plugin`` and converts the file to
  ``overview_page``). Wall time from spawn to exit; peak RSS from ``/usr/bin/time`` where it exists
  (else the child's rusage).
* **analyze() alone**: the ``tpudoctor.profile.analyze`` call (the per-host map and the combine,
  modules imported beforehand) against xprof's ``xspace_to_tools_data`` call
  (``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` calls it); peak RSS of each process.

The speed-up is the median of the pairs' own ratios (xprof time / tpudoctor time), the memory the
median of tpudoctor peak RSS / xprof peak RSS. xprof reads each file as a fresh copy in an empty
folder with ``use_saved_result=False``, so no cached result is reused. Before the pairs, each side
runs once unmeasured (bytecode caches and the page cache warm, as for a user's second run).

``--sizes-mb`` adds captures of a given file size: the x50 capture's XSpace repeated until that
size (``benchmarks/capture_memory.py``; serialized XSpaces concatenate into one whose planes
repeat, so the largest plane stays the x50 one's). xprof is left out, with a note, on files where
it would need more memory than the machine has available (about ``XPROF_RSS_PER_FILE_BYTE`` times
the file: 1.18 GB for the 40 MB x50 capture); ``--skip-xprof-over-mb`` lowers that limit.

``--hosts N`` then prints the parent's peak RSS of ``tpudoctor.profile.analyze`` on a logdir of N
copies of the x10 capture, the per-host map in local worker processes
(``benchmarks/bench_profile_hosts_rss.py``, in a fresh subprocess).

``--approaches`` also times the parse strategies considered for the loader on one size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"
WORK = Path(tempfile.gettempdir()) / "tpudoctor-bench"
# the console script a user runs, from the environment this benchmark runs in
TPUDOCTOR_COMMAND = ([str(Path(sys.executable).parent / "tpudoctor")] if (Path(sys.executable).parent / "tpudoctor").exists()
                     else [sys.executable, "-m", "tpudoctor"])
GNU_TIME = Path("/usr/bin/time")

# Peak RSS is the process's VmHWM: unlike ru_maxrss it starts afresh at exec, so a child does
# not inherit the benchmark's own peak.
PEAK_RSS = """
def peak_rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

TPUDOCTOR_CHILD = PEAK_RSS + """
import json, sys, time
imported = time.perf_counter()
import tpudoctor.profile
import tpudoctor.profile.analysis, tpudoctor.profile.pipeline, tpudoctor.profile.capture
started = time.perf_counter()
report = tpudoctor.profile.analyze(sys.argv[1])
elapsed = time.perf_counter() - started
print(json.dumps({"wall_s": elapsed, "import_s": started - imported, "peak_rss_mb": peak_rss_mb(),
                  "events": report.summary.n_events}))
"""

XPROF_CHILD = PEAK_RSS + """
import json, sys, time
from xprof.convert import _pywrap_profiler_plugin as plugin
started = time.perf_counter()
data, ok = plugin.xspace_to_tools_data([sys.argv[1]], sys.argv[2], {"use_saved_result": False})
elapsed = time.perf_counter() - started
print(json.dumps({"wall_s": elapsed, "peak_rss_mb": peak_rss_mb(),
                  "ok": bool(ok), "output_bytes": len(data)}))
"""

APPROACHES_CHILD = PEAK_RSS + """
import json, sys, time
import numpy as np
approach, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
started = time.perf_counter()
if approach == "upb-messages":
    # the plain way: iterate protobuf messages, one Python object per event and stat
    from tpudoctor.captures.schema import message_class
    space = message_class("XSpace").FromString(data)
    ids, offsets, durations, stat_count = [], [], [], 0
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                ids.append(event.metadata_id); offsets.append(event.offset_ps); durations.append(event.duration_ps)
                for stat in event.stats:
                    stat_count += 1
                    stat.WhichOneof("value")
    columns = [np.asarray(ids), np.asarray(offsets), np.asarray(durations)]
    events = len(ids)
else:
    # tpudoctor: upb splits lines into event bytes, numpy decodes all events at once
    from tpudoctor.captures.xspace import decode_host
    events = len(decode_host(data, hostname="h", source=path).events)
elapsed = time.perf_counter() - started
print(json.dumps({"wall_s": elapsed, "peak_rss_mb": peak_rss_mb(),
                  "events": events}))
"""


def build_captures(source: Path, scales: list[int]) -> dict[int, Path]:
    sys.path.insert(0, str(REPO))
    from benchmarks.make_big_capture import scale_capture

    WORK.mkdir(parents=True, exist_ok=True)
    paths = {}
    for scale in scales:
        target = WORK / f"x{scale}" / f"{source.name.removesuffix('.xplane.pb')}_x{scale}.xplane.pb"
        marker = target.with_suffix(".source")
        stamp = f"{source} {source.stat().st_size} {source.stat().st_mtime_ns}"
        if not target.exists() or not marker.exists() or marker.read_text() != stamp:
            target.parent.mkdir(parents=True, exist_ok=True)
            scale_capture(source, scale, target)
            marker.write_text(stamp)
        paths[scale] = target
    return paths


XPROF_RSS_PER_FILE_BYTE = 30


def xprof_would_fit(size_bytes: int) -> bool:
    """Whether xprof's converter (about 30x the file in memory) fits in what this machine has free."""
    for line in open("/proc/meminfo", encoding="ascii"):
        if line.startswith("MemAvailable:"):
            return size_bytes * XPROF_RSS_PER_FILE_BYTE < int(line.split()[1]) * 1024
    return True


def build_sized_captures(sizes_mb: list[int]) -> dict[str, Path]:
    sys.path.insert(0, str(REPO))
    from benchmarks.capture_memory import build

    folder = Path(tempfile.gettempdir()) / "tpudoctor-capture-memory"
    folder.mkdir(exist_ok=True)
    return {(f"{size >> 10} GB" if size % 1024 == 0 else f"{size} MB"): build(size << 20, folder) for size in sizes_mb}


def child_environment() -> dict[str, str]:
    """This environment, but with bytecode caches written and read, as a user's Python does."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_child(code: str, *args: str, timeout_s: float = 900) -> dict:
    """Run a measuring child script; its own JSON figures, plus ``process_s`` (spawn to exit) and the
    process's peak RSS as ``/usr/bin/time`` saw it (``process_rss_mb``)."""
    result = run_process([sys.executable, "-c", code, *args], timeout_s=timeout_s)
    if "error" in result:
        return result
    figures = json.loads(result.pop("stdout").strip().splitlines()[-1])
    return {**figures, **result}


def run_process(argv: list[str], *, timeout_s: float = 900, stdout=subprocess.PIPE) -> dict:
    """Run ``argv`` in a fresh process: ``process_s`` (wall, spawn to exit), ``process_rss_mb`` (its
    peak RSS as ``/usr/bin/time`` reports it), ``stdout``; ``error`` when it fails."""
    with tempfile.NamedTemporaryFile("r", prefix="bench-rss-") as rss:
        timed = [str(GNU_TIME), "-f", "%M", "-o", rss.name] if GNU_TIME.exists() else []
        started = time.perf_counter()
        done = subprocess.run([*timed, *argv], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout_s,
                              cwd=REPO, env=child_environment())
        elapsed = time.perf_counter() - started
        measured = rss.read().strip()
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    rss_mb = int(measured.splitlines()[-1]) / 1024 if measured else float("nan")
    return {"process_s": elapsed, "process_rss_mb": rss_mb, "stdout": done.stdout or ""}


def run_xprof(path: Path, tool: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="xprof-bench-") as folder:
        copy = Path(folder) / path.name  # xprof writes cached op_stats beside the file: start clean
        shutil.copyfile(path, copy)
        return run_child(XPROF_CHILD, str(copy), tool)


def run_tpudoctor_command(path: Path) -> dict:
    """``tpudoctor profile analyze FILE`` (text report), as a whole process."""
    result = run_process([*TPUDOCTOR_COMMAND, "profile", "analyze", str(path)], stdout=subprocess.DEVNULL)
    result.pop("stdout", None)
    return result


def measure_pairs(path: Path, pairs: int, *, xprof: bool) -> dict[str, list[dict]]:
    """``pairs`` rounds of: the tpudoctor command, the tpudoctor analyze() child, xprof's converter
    (when ``xprof``), each a fresh process, the order reversed every other round; one unmeasured
    round first."""
    contenders = {"command": lambda: run_tpudoctor_command(path), "call": lambda: run_child(TPUDOCTOR_CHILD, str(path))}
    if xprof:
        contenders["xprof"] = lambda: run_xprof(path, "overview_page")
    for run in contenders.values():
        run()  # warm-up: bytecode caches, the page cache
    results: dict[str, list[dict]] = {name: [] for name in contenders}
    for index in range(pairs):
        order = list(contenders) if index % 2 == 0 else list(reversed(contenders))
        for name in order:
            results[name].append(contenders[name]())
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="real capture to scale up")
    parser.add_argument("--scales", default="1,10,50", help="comma-separated event multipliers (default 1,10,50)")
    parser.add_argument("--pairs", type=int, default=5, help="paired runs per capture (default 5; medians printed)")
    parser.add_argument("--skip-xprof", action="store_true", help="time tpudoctor only")
    parser.add_argument("--input-pipeline", action="store_true",
                        help="also time xprof's input_pipeline_analyzer (one run per capture)")
    parser.add_argument("--hosts", type=int, default=64,
                        help="hosts of the x10 logdir whose parent RSS is measured (0: none; default 64)")
    parser.add_argument("--approaches", action="store_true", help="also time the parse strategies on the largest size")
    parser.add_argument("--sizes-mb", default="1024", help="also captures of these file sizes in MB (default 1024)")
    parser.add_argument("--skip-xprof-over-mb", type=float, default=float("inf"),
                        help="do not run xprof on files larger than this (it needs ~30x the file in memory)")
    args = parser.parse_args()
    if not args.source.exists():
        print(f"source capture {args.source} not found (it lives in ../shared/data)", file=sys.stderr)
        return 2
    scales = [int(part) for part in args.scales.split(",") if part]
    paths: dict = {f"x{scale}": path for scale, path in build_captures(args.source, scales).items()}
    if args.sizes_mb:
        paths.update(build_sized_captures([int(part) for part in args.sizes_mb.split(",")]))
    rows, notes = [], []
    for name, path in paths.items():
        size_mb = path.stat().st_size / 1e6
        xprof = not args.skip_xprof and size_mb <= args.skip_xprof_over_mb and xprof_would_fit(path.stat().st_size)
        if not args.skip_xprof and not xprof:
            notes.append(f"xprof skipped on {name}: it needs about {XPROF_RSS_PER_FILE_BYTE}x the file "
                         f"({XPROF_RSS_PER_FILE_BYTE * size_mb / 1e3:.0f} GB), more than this machine has free")
        row = {"scale": name, "size_mb": size_mb, **measure_pairs(path, args.pairs, xprof=xprof)}
        if xprof and args.input_pipeline:
            row["input_pipeline_analyzer"] = run_xprof(path, "input_pipeline_analyzer")
        rows.append(row)
        print(f"{name} done", file=sys.stderr, flush=True)
    print_tables(rows, args.pairs)
    for note in notes:
        print(note)
    if args.hosts:
        print_hosts_rss(build_captures(args.source, [10])[10], args.hosts)
    if args.approaches:
        name, largest = max(paths.items(), key=lambda item: item[1].stat().st_size)
        print(f"\nParse strategies on {name} ({largest.stat().st_size / 1e6:.1f} MB), decode only:")
        for approach in ("upb-messages", "upb-raw-events+numpy"):
            result = run_child(APPROACHES_CHILD, approach, str(largest))
            print(f"  {approach:24s} {result.get('wall_s', float('nan')):7.2f} s  "
                  f"{result.get('peak_rss_mb', float('nan')):7.0f} MB peak RSS  {result.get('events', '?')} events")
    return 0


def _median(runs: list[dict], key: str) -> float:
    values = [run[key] for run in runs if key in run]
    return statistics.median(values) if values else float("nan")


def _ratios(numerators: list[dict], denominators: list[dict], top: str, bottom: str) -> list[float]:
    """Each pair's own ratio (pair i of one side over pair i of the other)."""
    return [n[top] / d[bottom] for n, d in zip(numerators, denominators, strict=True) if top in n and bottom in d]


def _ratio_cell(values: list[float]) -> str:
    if not values:
        return f"{'-':>20s}"
    return f"{statistics.median(values):6.2f}x ({min(values):.2f}-{max(values):.2f})"


def _time_cell(runs: list[dict], time_key: str, rss_key: str) -> str:
    errors = [run["error"] for run in runs if "error" in run]
    if errors and len(errors) == len(runs):
        return f"{errors[0][:16]:>16s}"
    return f"{_median(runs, time_key):7.2f}s {_median(runs, rss_key):6.0f}MB"


def print_tables(rows: list[dict], pairs: int) -> None:
    events = {row["scale"]: next((r["events"] for r in row["call"] if "events" in r), 0) for row in rows}
    for title, ours, ours_time, ours_rss, theirs_time, theirs_rss, theirs_label in (
        ("Whole process: `tpudoctor profile analyze FILE` vs xprof's converter process (overview_page)",
         "command", "process_s", "process_rss_mb", "process_s", "process_rss_mb", "xprof process"),
        ("analyze() alone: tpudoctor.profile.analyze vs xprof's xspace_to_tools_data call (overview_page)",
         "call", "wall_s", "peak_rss_mb", "wall_s", "peak_rss_mb", "xprof call"),
    ):
        print(f"\n{title}; medians of {pairs} pairs")
        header = (f"{'capture':>7s} {'MB':>6s} {'events':>10s} | {'tpudoctor':>16s} | {theirs_label:>16s} | "
                  f"{'speed-up (range)':>20s} | {'memory (range)':>20s}")
        print(header)
        print("-" * len(header))
        for row in rows:
            xprof = row.get("xprof", [])
            line = (f"{row['scale']:>7s} {row['size_mb']:6.1f} {events[row['scale']]:10,d} | "
                    f"{_time_cell(row[ours], ours_time, ours_rss):>16s} | ")
            if xprof:
                line += (f"{_time_cell(xprof, theirs_time, theirs_rss):>16s} | "
                         f"{_ratio_cell(_ratios(xprof, row[ours], theirs_time, ours_time))} | "
                         f"{_ratio_cell(_ratios(row[ours], xprof, ours_rss, theirs_rss))}")
            else:
                line += f"{'not run':>16s} | {'-':>20s} | {'-':>20s}"
            print(line)
            if "input_pipeline_analyzer" in row:
                pipeline = row["input_pipeline_analyzer"]
                print(f"{'':>26s} xprof input_pipeline_analyzer: {_time_cell([pipeline], theirs_time, theirs_rss)}")
    print("\nspeed-up = xprof time / tpudoctor time; memory = tpudoctor peak RSS / xprof peak RSS (each the median "
          "of the pairs' own ratios)")
    imports = [r["import_s"] for row in rows for r in row["call"] if "import_s" in r]
    if imports:
        print(f"analyze() alone excludes imports (tpudoctor's took {statistics.median(imports):.2f}s); "
              "its RSS is the whole process's")


def print_hosts_rss(host_file: Path, hosts: int) -> None:
    """Parent peak RSS of the per-host map over a logdir of ``hosts`` copies of ``host_file``."""
    sys.path.insert(0, str(REPO))
    from benchmarks.bench_profile_hosts_rss import build_logdir, measure

    logdir = build_logdir(Path(tempfile.gettempdir()) / "tpudoctor-bench-hosts" / f"{hosts}-host-{host_file.stem}",
                          host_file, hosts)
    result = measure(logdir, "map")
    print(f"\n{hosts}-host logdir of {host_file.name} ({host_file.stat().st_size / 1e6:.1f} MB each), "
          f"local worker processes: {result['wall_s']:.1f} s, {result['events']:,} events, "
          f"parent peak RSS {result['parent_peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
