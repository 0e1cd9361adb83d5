"""Load speed and memory: tpudoctor against xprof's own converters, on captures of growing size.

    .venv/bin/python benchmarks/bench_profile_load.py          # x1, x10, x50, x1300, 1 GB and a 64-host logdir of x10
    .venv/bin/python benchmarks/bench_profile_load.py [--source X.xplane.pb] [--scales 1,10,50] [--sizes-mb 1024]
        [--hosts 64] [--skip-xprof] [--input-pipeline]

Builds larger captures from a real one (every line's events repeated N times, shifted in time;
x50 of the v6e capture is about 40 MB and 1.3 M events, x1300 about 1 GB and 35 M events with the
host plane alone about 70 % of the file) under /tmp/tpudoctor-bench, then runs
each contender in its own subprocess (so peak RSS is clean) on the same file and prints wall time
of the call and the process's peak RSS side by side:

* tpudoctor: ``tpudoctor.profile.analyze`` (the per-host map and the combine: what
  ``tpudoctor profile analyze`` does, minus rendering);
* xprof ``overview_page`` (and with ``--input-pipeline`` ``input_pipeline_analyzer``) through
  ``xprof.convert._pywrap_profiler_plugin.xspace_to_tools_data`` (the call behind
  ``xprof.convert.raw_to_tool_data.xspace_to_tool_data``), each on a fresh copy of the file in an
  empty folder, with ``use_saved_result=False``, so no cached result is reused.

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
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"
WORK = Path(tempfile.gettempdir()) / "tpudoctor-bench"

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
import tpudoctor.profile.analysis, tpudoctor.profile.pipeline, tpudoctor.profile.xspace
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
    from tpudoctor.profile.schema import message_class
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
    from tpudoctor.profile.xspace import decode_host
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


def run_child(code: str, *args: str, timeout_s: float = 900) -> dict:
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout_s,
                            cwd=REPO)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_xprof(path: Path, tool: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="xprof-bench-") as folder:
        copy = Path(folder) / path.name  # xprof writes cached op_stats beside the file: start clean
        shutil.copyfile(path, copy)
        return run_child(XPROF_CHILD, str(copy), tool)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="real capture to scale up")
    parser.add_argument("--scales", default="1,10,50,1300",
                        help="comma-separated event multipliers (default 1,10,50,1300)")
    parser.add_argument("--skip-xprof", action="store_true", help="time tpudoctor only")
    parser.add_argument("--input-pipeline", action="store_true", help="also time xprof's input_pipeline_analyzer")
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
        row = {"scale": name, "size_mb": size_mb, "tpudoctor": run_child(TPUDOCTOR_CHILD, str(path))}
        if not args.skip_xprof:
            fits = size_mb <= args.skip_xprof_over_mb and xprof_would_fit(path.stat().st_size)
            skipped = None if fits else {"error": "skipped"}
            if skipped:
                notes.append(f"xprof skipped on {name}: it needs about {XPROF_RSS_PER_FILE_BYTE}x the file "
                             f"({XPROF_RSS_PER_FILE_BYTE * size_mb / 1e3:.0f} GB), more than this machine has free")
            row["overview_page"] = skipped or run_xprof(path, "overview_page")
            if args.input_pipeline:
                row["input_pipeline_analyzer"] = skipped or run_xprof(path, "input_pipeline_analyzer")
        rows.append(row)
        print(f"{name} done", file=sys.stderr, flush=True)
    print_table(rows)
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


def _cell(result: dict) -> str:
    if "error" in result:
        return f"{result['error'][:8]:>8s} {'':>8s}"
    return f"{result['wall_s']:7.2f}s {result['peak_rss_mb']:6.0f}MB"


def print_table(rows: list[dict]) -> None:
    xprof = "overview_page" in rows[0]
    pipeline = "input_pipeline_analyzer" in rows[0]
    header = f"{'capture':>7s} {'MB':>6s} {'events':>10s} | {'tpudoctor':>16s} {'us/event':>8s}"
    if xprof:
        header += f" | {'xprof overview_page':>19s}"
        header += f" | {'xprof input_pipeline':>20s}" if pipeline else ""
        header += f" | {'speed-up':>8s} {'memory':>7s}"
    print(header)
    print("-" * len(header))
    for row in rows:
        ours = row["tpudoctor"]
        events = ours.get("events", 0)
        per_event = ours["wall_s"] / events * 1e6 if events and "wall_s" in ours else float("nan")
        line = f"{row['scale']:>7s} {row['size_mb']:6.1f} {events:10,d} | {_cell(ours):>16s} {per_event:8.2f}"
        if xprof:
            overview = row["overview_page"]
            line += f" | {_cell(overview):>19s}"
            line += f" | {_cell(row['input_pipeline_analyzer']):>20s}" if pipeline else ""
            if "wall_s" in overview and "wall_s" in ours:
                line += (f" | {overview['wall_s'] / ours['wall_s']:7.1f}x "
                         f"{ours['peak_rss_mb'] / overview['peak_rss_mb']:6.2f}x")
        print(line)
    if xprof:
        print("speed-up = xprof overview_page time / tpudoctor time; memory = tpudoctor peak RSS / overview_page peak RSS")
    print("tpudoctor = tpudoctor.profile.analyze (map + combine); times are of the call (imports excluded: "
          f"tpudoctor's took {rows[0]['tpudoctor'].get('import_s', float('nan')):.2f}s), RSS is the whole process")


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
