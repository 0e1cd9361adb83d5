"""Peak memory of loading a large capture, against its file size: states the bound k = peak RSS / size.

    .venv/bin/python benchmarks/capture_memory.py                      # 64 MB, 256 MB and 1 GB
    .venv/bin/python benchmarks/capture_memory.py --sizes-mb 64,256
    .venv/bin/python benchmarks/capture_memory.py --sizes-mb 1024 --stats analysis --baseline /tmp/old --pairs 4

The capture is the real v6e inference capture (../shared/data/xprof_tpu_inference_2.xplane.pb)
with every line's events repeated 50x (benchmarks/make_big_capture.py, realistic event density),
then that XSpace repeated until the wanted size (serialized XSpaces concatenate into one whose
planes repeat). Each load runs in a fresh subprocess so its peak RSS (VmHWM, Linux) is its own.
``--stats analysis`` loads only the stats ``profile analyze`` reads; ``--checkout`` another checkout's tpudoctor;
``--baseline`` a second checkout, loaded alternately with it ``--pairs`` times (CPU time split into user and sys:
on a VM the sys part, zeroing memory first touched, varies several-fold with the host's load).
``table_bytes_per_event`` counts the events table's buffers and the stats kept beside it only where present
(``sparse_stats_bytes``; each buffer once, all-missing views none); RSS can be
lower where a column's pages were never written (a stat present on a quarter of the events).

2026-12-05, shared 2-core machine at load 2-3.4, ``--stats analysis`` (commits after 0ab43d1 against a worktree
of 0ab43d1)::

    file     events      bytes/event   RSS after load   peak RSS         seconds
    256 MB    9,353,050  61 -> 58      621 -> 597 MB    677 -> 607 MB    1.9 -> 1.7
    1 GB     36,076,050  61 -> 59      1.95 -> 1.87 GB  2.17 -> 1.91 GB  7.2-11.9 -> 6.1-13.1 (noisy)

With every stat a column (the default, ``tpudoctor.profile.load``'s; load 3-4)::

    64 MB     2,672,300  137 -> 106    434 -> 392 MB    452 -> 428 MB    1.0 -> 1.6
    256 MB    9,353,050  137 -> 106    1,124 -> 911 MB  1,180 -> 1,035 MB  4.4 -> 4.5

The 1 GB load's CPU time, 5 alternating pairs (load 3.1-3.9): median 5.66 -> 4.85 s. Of the 59 bytes per event,
45 are 64-bit by range (start_ps, duration_ps, program_id, device_offset_ps, device_duration_ps).

The compiled kernel on threads (2026-12-05 17:20-17:35 UTC, commits after 9af5034 against a worktree of main at
3104ee9, same decoder; the machine's 2 cores shared with 5 other sessions, so a second core was free only at
times: where it was not, wall = CPU below). ``--stats analysis``, 1 GB, 5 alternating pairs at load 1.6-2.1::

    wall s              CPU s               peak RSS              RSS after load
    4.73-6.87 (5.81)    5.64-6.92 (5.74)    1.906-1.915 GB (1.911)  1.869-1.879 GB
    4.31-6.23 (5.48)    4.29-6.32 (5.58)    1.906-1.913 GB (1.907)  1.867-1.876 GB   (before; medians in brackets)

(in 4 of the 5 the threads found no free core). In one process, the same tree with threads and serial
alternating (``decode_host_file``, 9 pairs at load 1.3-4.0): the load 3.81-6.71 s (median 4.56) against
5.29-5.91 (5.72), the events' phase 2.10-4.85 (2.86) against 3.53-4.07 (3.96). In that phase the kernel is
2.4-3.6 s of CPU on the threads, the main thread 1.0-1.55 s (reading the lines, filling the columns), of which
it waited 0.6-1.8 s for the threads: with a core per thread the phase would be the main thread's ~1.2 s. The
first pass (headers) is 0.31 s: the line header kernel 0.17 s, the reads 0.09 s, so reading each line once
instead of twice would save ~0.1 s of the ~5 s; not done (the lines or growing columns would be held instead).
Every stat, 256 MB, 3 pairs at load 2.1-2.4, no free core: 1.54, 2.21, 2.02 s against 1.41, 2.01, 1.63 s,
peak RSS 1,047-1,052 against 1,036-1,054 MB. 64 MB (2.67 M events) in one process: with a free core (2 pairs,
load 2.4) the events' phase 0.12-0.13 s against 0.17 s, the load 0.41-0.42 against 0.46; without one (5 pairs,
load 2.5-2.7) 0.19-0.42 s against 0.17 s: each batch in flight has stat arrays and line bytes of its own (6-8 k
more page faults, ~30 MB first touched). The 57 MB GPU capture (694 k events) gained 0.02 s of its events'
phase (0.09 against 0.11 s) and nothing whole-process (9 pairs, load 1.9-2.1: median 0.72 against 0.71 s, peak
RSS 225-233 against 227 MB), so it stays serial (``decoder.PARALLEL_MIN_EVENTS``: 2 M events). Whole ``profile
analyze`` on 1 GB, 2 pairs at load 1.9-4.0: 17.5 and 20.4 s against 16.6 and 16.5 s (user 7.6-8.0 against
7.8 s, sys 4.4-6.1 against 3.2-4.0 s), peak RSS 2.62-2.63 against 2.60-2.61 GB: the analyses are 10+ s of it.
After merging main (its analyses' smaller peak), same tree with and without threads, 3 pairs at load 1.2-1.6:
10.23, 8.49, 10.20 s against 10.30, 9.61, 10.01 s, peak RSS 2.423-2.427 against 2.401-2.411 GB, the JSON
reports identical. Threads that merely exist (a pool started and ended before a serial load) raise the 256 MB
load's peak alike (586 against 574-578 MB; with ``MALLOC_ARENA_MAX=1`` the threaded load's peak was 607-614 MB,
as main's 606-614, against 615-627 without): glibc's heap per thread, not the batches in flight (one fewer in flight, or the stat arrays in pages of
their own, left it at 617 MB). So the threads start from three cores, one per core but the main thread's
(``decoder.decode_threads``): on this 2-core machine every load is the serial one, as before.

The compiled kernel's decode cut (2026-12-05 19:18-19:20 UTC, ``--stats analysis --baseline`` a worktree of
fa2e89a, 4 alternating pairs at load 7.2-7.7: the 2 cores shared with other sessions' test runs, so wall >> CPU).
1 GB: CPU 5.57-7.03 s (median 5.8) -> 3.16-5.00 (3.6), of it user 3.19-3.24 -> 2.07-2.11 s and sys 2.35-3.79 ->
1.05-2.89 s; wall 14.7-16.2 -> 8.1-11.5 s; peak RSS 1.904-1.907 -> 1.905-1.911 GB, after the load 1.867-1.870 ->
1.868-1.874 GB. At load 3.2-4.0 (19:14, 4 pairs, ``decode_host_file`` alone): CPU 5.12-6.66 -> 3.91-4.61 s, user
3.02-3.27 -> 2.02-2.09 s, wall 5.66-7.12 -> 4.23-5.33 s. 64 MB (2 pairs, load 7.5): CPU 0.57-0.70 -> 0.47-0.49 s,
peak RSS 298-301 -> 302 MB. x50 (40 MB, 1.34 M events; 4 pairs, load 8.6): CPU 0.30-0.35 -> 0.27-0.34 s, peak RSS
233-236 -> 239-241 MB: glibc's heap, not the arrays (tracemalloc's peak 89.5 -> 86.8 MB; with a fixed
``MALLOC_MMAP_THRESHOLD_`` both peak at 229-230 MB). What did it:

* the kernel's varints read by a ``while`` loop: numba's code for the bounded ``for`` loop with returns in it was
  2.4x slower (the kernel alone on x50's 142 lines, best of 7: 57 -> 22 ms, i.e. ~1.55 -> 0.6 s on 1 GB), and
  tags compared as int64 constants;
* the events' metadata ids written in int16 (widened where one does not fit) and each event's metadata row
  written by the kernel, so that neither the int64 ids (288 MB) nor the table builder's lookup pass remain.

Where the rest went (``perf record`` of the 1 GB load, before the small pages below): 45-65 % of its CPU is the OS zeroing memory first
touched (``clear_page_erms``; on this VM 0.35-1.6 GB/s, varying with the host), a quarter of that for the
~0.8 GB of columns the kernel writes (offset and duration 64-bit, metadata rows 32-bit, ids 16-bit), the rest
for the stat columns and their temporaries (``tables``). Tried and not kept: numba's ``inline='always'`` on the
varint helpers (4x slower: the inlined ``for`` loop), a branchless 8-byte varint decode (slower than the
``while`` loop on these mostly 1-2 byte varints), any helper taking arrays (a lookup helper made the kernel
3.5x slower: each call counts the arrays' references). Not tried, measured first: skipping the values of
stats the options do not keep (all stats skipped, a bound, saves 5 of the kernel's 22 ms on x50, and two thirds
of them are unwanted: not worth a second rule for which field names a stat).

The tables built in small pages (``reader.small_pages``: numpy's transparent-huge-page advice off while they
are built; 2026-12-05 19:33-19:35 UTC, against a worktree of the commit before, alternating pairs): 1 GB, 3 pairs
at load 2.3-4.2: CPU 4.30-5.92 -> 3.09-3.35 s (sys 2.22-3.97 -> 1.07-1.17, user 1.95-2.08 -> 2.02-2.25), peak RSS
1.903-1.914 -> 1.706-1.707 GB, after the load 1.866-1.877 -> 1.669-1.670 GB; 256 MB (3 pairs, load 4.0): CPU
0.90-1.72 -> 1.02-1.09 s, peak RSS 608-610 -> 559 MB; 64 MB: CPU 0.46-0.59 -> 0.50-0.53 s, peak RSS 297-306 ->
288 MB; x50 (3 pairs, load 3.8-4.0, ``decode_host_file``): CPU 0.30-0.43 -> 0.32 s, peak RSS 240-241 -> 236 MB.
Whole ``profile analyze`` of 1 GB, 2 pairs at load 3.2-3.7: user 5.62-5.81 -> 5.84-5.91 s, sys 3.23-3.81 ->
2.43-3.03 s, peak RSS 2.40 -> 2.20-2.21 GB (the analyses' reads of 4 KiB-paged arrays cost ~0.1-0.2 s of user
time). With huge pages, every array a stat is scattered into is in memory whole at its first touches (2 MiB
each), and zeroing them was most of the sys time.

All of it against fa2e89a (19:38-19:39 UTC, 4 alternating pairs each): 1 GB at load 3.4-4.5: CPU 5.29-6.74 s
(median 6.2) -> 3.19-4.04 (3.5), user 3.03-3.11 -> 2.06-2.18 s, sys 2.18-3.71 -> 1.13-1.88 s, wall 6.97-10.63 ->
3.51-8.71 s, peak RSS 1.904-1.911 -> 1.706-1.708 GB. x50 at load 4.5-5.3 (``decode_host_file``): CPU 0.30-0.40 ->
0.28-0.35 s, peak RSS 233-235 -> 236-237 MB (glibc's heap: the int16 ids, 2.7 MB there, fall under its dynamic
mmap threshold; with ``MALLOC_MMAP_THRESHOLD_`` fixed both peak at 229-230 MB).

The device ops' stats kept only at the events that carry them (``LoadOptions.sparse_stats``, 2026-12-05 19:37 UTC,
against a worktree of fa2e89a, load 2.9-4.0), ``--stats analysis``, 1 GB: table bytes per event 59.0 -> 35.6
(the events table 29.0, the sparse stats 6.6: 236 MB), RSS after load 1.87 -> 1.50 GB, peak RSS 1.90 -> 1.84 GB,
CPU 7.14 -> 7.01 s. The 27 bytes an event the three 64-bit device stats took as columns were partly never
resident (their values' pages where no event of a page has one): the RSS after load fell 370 MB, not 27 bytes an
event.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"
# VmHWM: ru_maxrss would carry the peak of the process that started this one over exec
CHILD = """
import json, os, sys, time
def status_bytes(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
import tpudoctor.profile
from tpudoctor.captures.xspace import LoadOptions
sys.path.append(sys.argv[3])
from capture_memory import sparse_bytes, table_bytes
base = status_bytes("VmHWM")
t, before = time.monotonic(), os.times()
options = LoadOptions.for_analysis() if sys.argv[2] == "analysis" else LoadOptions()
capture = tpudoctor.profile.load(sys.argv[1], options=options)
seconds, after = time.monotonic() - t, os.times()
user, system = after.user - before.user, after.system - before.system
host = next(iter(capture.hosts.values()))
events = len(host.events)
tables = table_bytes(host.events)
sparse = sparse_bytes(host)
print(json.dumps({"seconds": round(seconds, 2), "cpu_seconds": round(user + system, 2), "user_seconds": round(user, 2),
                  "sys_seconds": round(system, 2), "load_average": round(os.getloadavg()[0], 1), "events": events, "peak_rss_bytes": status_bytes("VmHWM"),
                  "rss_before_load_bytes": base, "rss_after_load_bytes": status_bytes("VmRSS"),
                  "events_table_bytes": tables, "sparse_stats_bytes": sparse,
                  "table_bytes_per_event": round((tables + sparse) / max(events, 1), 1)}))
"""


def table_bytes(frame) -> int:
    """Bytes the columns of ``frame`` hold: each buffer once (a column may share another's, as the events'
    ``plane_name`` codes share ``plane_id``), none for the read-only views of an all-missing column."""
    import numpy as np
    import pandas as pd

    seen: set[int] = set()
    total = 0
    for name in frame.columns:
        array = frame[name].array
        if isinstance(array, pd.Categorical):
            buffers = [array.codes]
        elif isinstance(array, pd.arrays.IntegerArray | pd.arrays.BooleanArray):
            buffers = [array._data, array._mask]  # noqa: SLF001 - the only way to the buffers
        else:
            buffers = [np.asarray(array)]
        for buffer in buffers:
            address = buffer.__array_interface__["data"][0]
            if (buffer.size > 1 and 0 in buffer.strides) or address in seen:
                continue
            seen.add(address)
            total += buffer.nbytes
    return total


def sparse_bytes(host) -> int:
    """Bytes of the stats ``host`` keeps only at the events that carry them (``HostProfile.sparse_stats``; a
    checkout without them: 0), each buffer once (stats present on the same events share their rows)."""
    buffers = {id(array): array for stat in getattr(host, "sparse_stats", {}).values()
               for array in (stat.rows, stat.values, stat.codes) if array is not None and array.dtype != object}
    return sum(array.nbytes for array in buffers.values())


def build(size_bytes: int, folder: Path) -> Path:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from make_big_capture import scale_capture

    unit = folder / "x50.xplane.pb"
    if not unit.exists():
        scale_capture(SOURCE, 50, unit)
    data = unit.read_bytes()
    out = folder / f"capture_{size_bytes >> 20}mb" / "host.xplane.pb"
    out.parent.mkdir(exist_ok=True)
    if not out.exists():
        with open(out, "wb") as handle:
            for _ in range(max(1, round(size_bytes / len(data)))):
                handle.write(data)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", default="64,256,1024")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "tpudoctor-capture-memory")
    parser.add_argument("--checkout", type=Path, default=REPO,
                        help="load with the tpudoctor of this checkout (e.g. a `git worktree add` of an older commit)")
    parser.add_argument("--baseline", type=Path,
                        help="also load with this checkout, alternating with --checkout (pairs of fresh processes)")
    parser.add_argument("--pairs", type=int, default=1, help="loads per checkout, alternating with --baseline")
    parser.add_argument("--stats", choices=("all", "analysis"), default="all",
                        help="every stat a column (tpudoctor.profile.load's default), or only those profile analyze reads")
    args = parser.parse_args()
    if not SOURCE.is_file():
        sys.exit(f"{SOURCE} is absent (the real captures live beside the checkout in ../shared/data)")
    args.folder.mkdir(exist_ok=True)
    for size_mb in (int(s) for s in args.sizes_mb.split(",")):
        path = build(size_mb << 20, args.folder)
        checkouts = [args.baseline, args.checkout] if args.baseline else [args.checkout]
        for _ in range(args.pairs):
            for checkout in checkouts:
                _measure(path, size_mb, checkout, args.stats, tree=len(checkouts) > 1)


def _measure(path: Path, size_mb: int, checkout: Path, stats: str, *, tree: bool) -> None:
    """One load of ``path`` in a fresh process with ``checkout``'s tpudoctor; prints its JSON row."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), stats, str(REPO / "benchmarks")],
                          capture_output=True, text=True, cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)})
    if proc.returncode:
        print(json.dumps({"file_mb": size_mb, "error": proc.stderr.strip().splitlines()[-1:]}))
        return
    row = ({"checkout": str(checkout)} if tree else {}) | json.loads(proc.stdout)
    size = path.stat().st_size
    row.update(file_bytes=size, k_peak_rss_per_file_byte=round(row["peak_rss_bytes"] / size, 2),
               k_load_growth_per_file_byte=round((row["peak_rss_bytes"] - row["rss_before_load_bytes"]) / size, 2))
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
