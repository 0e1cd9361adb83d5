"""Parse time and peak RSS of the memory-event reader (tpudoctor.memory), beside xprof's memory_profile.

    .venv/bin/python benchmarks/memory_events.py                  # the largest capture in ../shared/data, x10, x50
    .venv/bin/python benchmarks/memory_events.py [--source X.xplane.pb] [--scales 10,50] [--runs 3] [--skip-xprof]
    .venv/bin/python benchmarks/memory_events.py --gigabyte [--runs 1]  # + a ~1 GB capture, "read" only

The largest capture in ../shared/data (the TF GPU multi-worker one, 3.0 MB, 2,493 memory events of
23,128) and larger ones made from it by repetition (``benchmarks/make_big_capture.py``: every
line's events repeated N times, shifted in time; under /tmp/tpudoctor-bench). Each figure is the
median of ``--runs`` fresh processes, modules imported before the clock starts:

* ``read``: ``read_memory_events`` (the host plane's memory events decoded, the others left out before; their
  columns);
* ``capture``: ``read_memory_capture``, what ``tpudoctor memory`` reads of a capture (the memory events, the
  programs' HloProtos and their runs, from one decode of the file);
* ``analyse``: ``read`` + ``allocator_timelines`` + ``peak_breakdown`` of every allocator;
* ``xprof``: xprof's ``xspace_to_tool_data(..., "memory_profile")`` (its JSON included) on a fresh copy;

``--gigabyte`` adds a ~1 GB capture: the x50 one with every host line's events (as bytes) repeated
until the file is about 1 GB (copies not shifted in time: a reading benchmark, not an analysis
one); written under /tmp/tpudoctor-bench (or ``.bench_tmp`` in the repository where /tmp has under
3 GB free) and deleted after; only ``read`` is measured on it, with the child's
``resource.getrusage`` peak RSS (``ru_maxrss``) beside VmHWM.

wall and CPU seconds (``process_time``: steadier than the wall clock on a busy machine); peak RSS
is the process's VmHWM after the work (the imports' share included: ``baseline`` is the
RSS after the imports alone).

Figures, 2026-12-05 (2 shared cores, load average 2.9-3.2; old and new runs alternated on the same machine),
``--source ../shared/data/xprof_tpu_inference_2.xplane.pb --scales 50 --runs 3 --skip-xprof``, the v6e x50 capture
(39.9 MB, 45,300 memory events of ~1.34 M), before -> after the memory read's selection of lines and events
(``LoadOptions.lines``/``events``: only the allocators' events and the XLA Modules lines decoded), two rounds each:

    read     peak RSS 293.8 / 296.0 MB -> 205.1 / 207.3 MB   wall 0.352 / 0.192 s -> 0.260 / 0.174 s
    capture  peak RSS 422.7 / 426.2 MB -> 209.4 / 209.5 MB   wall 0.547 / 0.326 s -> 0.296 / 0.222 s

The whole command, ``/usr/bin/time -f '%e s %M KB' tpudoctor memory CAPTURE --format json`` (medians of runs
alternated old/new), JSON byte-identical before and after (``duration_s`` aside):

    x50 (40 MB), 6 pairs, load 3.5        1.47 s, 419,228 KB -> 1.00 s, 209,436 KB
    64 MB (x50 twice), 3 pairs, load 3.0  2.44 s, 583,632 KB -> 1.48 s, 254,672 KB
    256 MB, 1 pair, load 2.9              11.04 s, 1,543,948 KB -> 1.95 s, 338,412 KB

The read's peak is now the imports (107 MB), the compiled decoder loaded (~50 MB) and the kept events' stats;
a file from 64 MB, opened 3 + 2 x planes times before (17 for the v6e capture's 7 planes), its plane headers and
lines read twice, is opened once and each of its bytes read once.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
WORK = Path(tempfile.gettempdir()) / "tpudoctor-bench"

_CHILD = r"""
import json, sys, time, shutil, os
mode, path = sys.argv[1], sys.argv[2]
def vm(name):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(name):
                return int(line.split()[1]) * 1024
if mode == "xprof":
    from xprof.convert import raw_to_tool_data as raw
    copy = sys.argv[3]
    shutil.copyfile(path, copy)
else:
    from tpudoctor.captures.memory_capture import read_memory_capture
    from tpudoctor.captures.memory_events import read_memory_events
    from tpudoctor.memory.timeline import allocator_timelines
    from tpudoctor.memory.buffers import peak_breakdown
baseline = vm("VmRSS:")
start, cpu_start = time.perf_counter(), time.process_time()
if mode == "xprof":
    data, _ = raw.xspace_to_tool_data([copy], "memory_profile", {"use_saved_result": False})
    n = len(json.loads(data)["memoryIds"])
elif mode == "capture":
    n = len(read_memory_capture(path).events)
else:
    events = read_memory_events(path)
    n = len(events)
    if mode == "analyse":
        for timeline in allocator_timelines(events).values():
            peak_breakdown(timeline)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
import resource
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss": vm("VmHWM:"), "baseline_rss": baseline, "n": n,
                  "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def _largest_capture() -> Path:
    captures = sorted(SHARED.glob("**/*.xplane.pb"), key=lambda p: p.stat().st_size)
    if not captures:
        sys.exit(f"no capture under {SHARED}")
    return captures[-1]


def _scaled(source: Path, factor: int) -> Path:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from make_big_capture import scale_capture

    WORK.mkdir(parents=True, exist_ok=True)
    target = WORK / f"{source.name.removesuffix('.xplane.pb')}.memory_x{factor}.xplane.pb"
    if not target.exists():
        scale_capture(source, factor, target)
    return target


GIGABYTE = 1 << 30


def _gigabyte_capture(x50: Path) -> Path:
    """A ~1 GB capture from the x50 one: each host line's events repeated (as bytes) so that the
    host plane is about 1 GB; the other planes as they are. Built plane by plane, line by line."""
    from tpudoctor.captures.schema import message_class
    from tpudoctor.captures.wire import encode_varint

    folder = WORK if shutil.disk_usage(tempfile.gettempdir()).free > 3 * GIGABYTE else REPO / ".bench_tmp"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "memory_1gb.xplane.pb"
    space = message_class("XSpace", raw=True).FromString(x50.read_bytes())
    raw_line = message_class("XLine", raw=True)
    host = [plane for plane in space.planes if plane.name == "/host:CPU"][0]
    host_bytes = sum(len(line) for line in host.lines)
    repeat = max(1, round((GIGABYTE - (x50.stat().st_size - host_bytes)) / host_bytes))
    with open(target, "wb") as out:
        for plane in space.planes:
            if plane is not host:
                data = plane.SerializeToString()
                out.write(b"\x0a" + encode_varint(len(data)) + data)
                continue
            lines = list(plane.lines)
            del plane.lines[:]
            head = plane.SerializeToString()
            parts = [head]
            size = len(head)
            for line_bytes in lines:
                line = raw_line.FromString(line_bytes)
                events = list(line.events)
                del line.events[:]
                line.events.extend(events * repeat)
                data = line.SerializeToString()
                del line, events
                field = b"\x1a" + encode_varint(len(data))
                parts.append((field, data))
                size += len(field) + len(data)
            out.write(b"\x0a" + encode_varint(size))
            out.write(head)
            for field, data in parts[1:]:
                out.write(field)
                out.write(data)
            del parts
    return target


def _run(mode: str, path: Path, runs: int) -> dict:
    results = []
    for index in range(runs + 1):  # the first run warms the page cache and bytecode: not counted
        args = [sys.executable, "-c", _CHILD, mode, str(path)]
        if mode == "xprof":
            folder = Path(tempfile.mkdtemp(prefix="xprof-", dir=WORK))
            args.append(str(folder / path.name))
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if mode == "xprof":
            shutil.rmtree(folder, ignore_errors=True)
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
        if index:
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=None)
    parser.add_argument("--scales", default="10,50")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-xprof", action="store_true")
    parser.add_argument("--gigabyte", action="store_true", help="also a ~1 GB capture (read only; deleted after)")
    args = parser.parse_args(argv)
    source = args.source or _largest_capture()
    captures = [(1, source)] + [(int(s), _scaled(source, int(s))) for s in args.scales.split(",") if s.strip()]
    modes = ["read", "capture", "analyse"] + ([] if args.skip_xprof else ["xprof"])
    print(f"source: {source.name}; medians of {args.runs} fresh processes; RSS in MB (baseline: after imports)")
    print(f"{'capture':>10} {'file MB':>8} {'mem events':>10} "
          + " ".join(f"{m + ' s':>10} {m + ' cpu':>11} {m + ' RSS':>11}" for m in modes)
          + f" {'baseline':>9}")
    for factor, path in captures:
        row = {mode: _run(mode, path, args.runs) for mode in modes}
        read = row["read"]
        cells = []
        for mode in modes:
            result = row[mode]
            if "error" in result:
                cells.append(f"{'error':>10} {'':>11} {result['error'][:11]:>11}")
            else:
                cells.append(f"{result['seconds']:>10.3f} {result['cpu_seconds']:>11.3f} {result['peak_rss'] / 1e6:>11.1f}")
        events = int(read.get("n", 0))
        baseline = read.get("baseline_rss", 0) / 1e6
        print(f"{'x' + str(factor):>10} {path.stat().st_size / 1e6:>8.1f} {events:>10,} " + " ".join(cells)
              + f" {baseline:>9.1f}")
    if args.gigabyte:
        x50 = _scaled(source, 50)
        # built in a child: ru_maxrss survives exec, so a big parent would inflate the reader's figure
        code = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r}); import memory_events as m; "
                f"print(m._gigabyte_capture(m.Path({str(x50)!r})))")
        built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
        big = Path(built.stdout.strip().splitlines()[-1])
        try:
            result = _run("read", big, args.runs)
            if "error" in result:
                print(f"{'~1 GB':>10} {big.stat().st_size / 1e6:>8.1f} error: {result['error']}")
            else:
                print(f"{'~1 GB':>10} {big.stat().st_size / 1e6:>8.1f} {int(result['n']):>10,} read: "
                      f"{result['seconds']:.2f} s wall, {result['cpu_seconds']:.2f} s CPU, peak RSS "
                      f"{result['ru_maxrss'] / 1e6:.0f} MB (ru_maxrss; VmHWM {result['peak_rss'] / 1e6:.0f} MB), "
                      f"baseline {result['baseline_rss'] / 1e6:.0f} MB")
        finally:
            big.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
