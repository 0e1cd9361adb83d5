"""Where one host's analysis spends time and memory: wall time, CPU time and peak RSS of each phase.

    .venv/bin/python benchmarks/bench_profile_phases.py FILE.xplane.pb
    .venv/bin/python benchmarks/bench_profile_phases.py /tmp/tpudoctor-capture-memory/capture_1024mb/host.xplane.pb

Runs the real per-host map (``tpudoctor.profile.pipeline.analyze_host``) with each of its phases
(loading, then every analysis it calls) wrapped: the wrapper resets the process's peak RSS
(``/proc/self/clear_refs``), runs the phase and prints its wall and CPU time, its own peak RSS (VmHWM) and
the RSS it leaves behind (a phase called inside another counts in that one; the device-op
selection, shared by the analyses of one host, counts in the first analysis that asks for it).
Linux only. The 1 GB capture is built by ``bench_profile_load.py --sizes-mb 1024``
(or ``capture_memory.py``).

Measured 2026-12-05 19:40 UTC (issue 44: the analyses' time), the 1 GB capture, main (c716084) against this
branch merged with it (the same loader), each run a fresh process, alternating, 3 pairs at load 2.5 -> 1.8; CPU
seconds of each phase (the ``CPU s`` column; ``program_table`` includes the device-op selection it asks for first):

                                   main               after
    program_table                  1.84 1.81 1.12     0.42 0.40 0.40
    analyze_roofline               1.14 1.11 1.13     0.33 0.37 0.31
    analyze_device_ops             0.86 0.83 0.73     0.47 0.46 0.46
    analyze_host_ops               0.36 0.35 0.35     0.29 0.28 0.29
    find_steps                     0.28 0.27 0.20     0.11 0.10 0.10
    analyze_recompilation          0.21 0.21 0.20     0.13 0.12 0.12
    capture_window_ps              0.14 0.09 0.09     0.08 0.08 0.08
    host_collectives               0.09 0.09 0.09     0.06 0.06 0.05
    summarize_host, _framework     0.12 0.11 0.12     0.12 0.11 0.12
    the analyses together          5.05 4.87 4.03     2.00 1.99 1.93
    analyze_host (the load too)    8.25 7.91 7.10     5.00 4.92 4.90
    peak RSS of the map (MB)       2169 2168 2169     2117 2114 2119

(Before the merge, against fa2e89a, 3 pairs at load 4.0 -> 6.9: the analyses 5.13 5.06 4.32 -> 2.27 3.67 3.04 s CPU.)
The whole ``profile analyze`` of the 1 GB capture (``/usr/bin/time``), 2 pairs at load 1.5: wall 7.59 8.56 -> 5.56
5.75 s, user 5.42 5.66 -> 4.15 4.03 s, sys 2.25 2.93 -> 1.50 1.45 s, peak RSS 2,210,328 2,210,244 -> 2,156,584
2,156,472 KB; its JSON report byte for byte fa2e89a's (less ``duration_s``), as are those of x50 and the 57 MB GPU
capture (``check_profile_reports.py --baseline``). Where the time went, and what changed:

* the device-op selection (1.3 s): two text masks over 36 M events, then every op's plane, line, start and
  duration gathered and its self time worked out 262,144 ops at a time with (plane, line) keys. Now a TPU host's
  ops are its ``XLA Ops`` lines, found in the lines table (``events.whole_lines``: events are stored line after
  line, as many as the table counts; the selected rows' names and ids are checked), read as slices, self time
  line by line (``nesting.line_self_time``); the columns read at the ops later (``coded``, ``factorized``, a
  nullable stat) are slices of those lines too (``DeviceOpRows.spans``), not gathers of 8 M rows;
* metadata stats (flops, model_flops, bytes_accessed) were looked up per 65,536-op chunk, each lookup searching
  the bounds of all 189 planes: now each op's metadata row once (``DeviceOpRows.metadata_rows``) and a gather
  from each stat's values converted once;
* the roofline's metadata columns (3 stats, 5 breakdown byte counts, the hbm column) and the device ops' FLOPs:
  an 8 M-op array, a group sum and a total per column. An op's name is its metadata's, so its group is a function
  of its metadata row: ``grouping.SumsByRow`` counts each group's ops per row once and sums values per row;
  exact below 2**53 (2**52 for a total) as those sums were; a group or total past that (3 totals of the 1 GB
  capture) is pandas' sum of its own ops' values, gathered for those ops only;
* the program ids were factorized a second time in the roofline: now from ``op_programs``' codes; all ops' self
  time was summed four times (``DeviceOpRows.self_total_ps``);
* whole-line selections (``XLA Modules``, ``Steps``) from the lines table; selections hitting at most
  ``FEW_CODES`` categories compare codes instead of gathering a lookup per event; group first rows searched
  only among rows of keys not met before; the host-op label tables in one pass (none where nothing is chosen);
  the compile events' enclosing functions searched together (``ENCLOSING_ROUNDS``) instead of one by one;
  ``outermost`` sorted by one packed key.

What did not pay or is left: each core's busy time (``union_ps`` of 2 M ops, ~50 ms a core, half of it a stable
argsort) -- sorting starts and ends apart and sweeping costs as much; a total past 2**52 still reads every op's
value (pandas' float sum, in order); ``capture_window_ps`` and ``summarize_host`` each read all 36 M starts and
durations (~80 ms each); name selections that hit many names (the host transfers: 13) gather 36 M codes
(~40 ms); the device ops' groups (``Groups`` over 8 M ops) and their time sums (~100 ms in each of the device
ops and the roofline). The recompilation phase's own peak rose 1940 -> 1977 MB (a 36 M-row mask more at once),
below the map's peak at the roofline.

Measured 2026-12-05 on the shared 2-core machine (6 sessions at once; load averages as given), the 1 GB
capture (36,076,050 events, 8,117,550 device ops), before (0ab43d1) and after (2eaf502) the analyses stopped
copying per-op arrays. Each run a fresh process that loads the host, then times ``host_result`` (the
analyses, the report's per-host part), alternating old and new, 3 pairs at load 0.9 -> 1.75:

                                     before           after
    RSS after loading (MB)           1847-1856        1850-1869
    peak RSS in the analyses (MB)    2606-2618        2410-2433     (added: 760 -> 565 MB)
    CPU of the analyses (s)          6.39 6.63 6.78   4.52 4.54 4.57
    wall of the analyses (s)         6.40 6.73 7.00   4.57 4.59 4.62

(f9f65af, before the loop check's gaps went to table rows, 3 pairs at load 1.2 -> 1.6: CPU 5.97-6.99 vs
4.93-5.14 s; 6 more pairs at load 3.0 -> 7.1: peak 2602-2617 vs 2398-2416 MB, CPU 6.1-7.3 vs 4.5-4.9 s.)
What each analysis allocated over what it was given (tracemalloc, the selection of device ops counted where it
is made: 274 MB at peak, 235 MB kept), before -> after: the program table 706 -> 350 MB (with the selection),
``analyze_device_ops`` 460 -> 171, the roofline 367 -> 205, the per-op table 333 -> 0 (it reuses the
roofline's), the host ops 303 -> 111, the collectives 235 -> 89, the steps 209 -> 108. Where it went: the
device ops' kinds and programs were made four times, each a ``pd.factorize`` of every op's program id (a hash
table as long as the ops); group sums went through ``bincount`` on int64/float64 copies of keys and values as
long as the ops, or through pandas (a float copy, an int64 rank, its own codes) wherever the sum of all groups
passed 2**52, which a big capture's times do; selections compared a categorical Series per event (three 36 MB
arrays each); the host ops gathered index and time arrays of 6.5 M offload copies; the roofline held
bytes_accessed and HBM bytes for every op at once. Now: kinds and programs once per host, factorized 65,536
ops at a time; bincounts a chunk at a time, pandas only for the groups whose own sum reaches 2**53 (and only
over their rows); masks by category code; the HBM bytes written over bytes_accessed; the loop check's 135,000
gaps between runs as rows of name codes (``np.unique``), not a tuple of strings each. The whole ``profile
analyze`` on the 1 GB capture: peak RSS 2,680,000 -> 2,466,000 KB (3 pairs, load 1.25 -> 3.4; wall
14.3/22.1/19.7 -> 9.9/21.4/16.6 s, the load's). After merging main (3104ee9, its narrower loaded tables), main
vs this branch, 2 pairs at load 1.9 -> 4.0: 2,603,856/2,610,928 -> 2,398,376/2,392,812 KB, 18.3/21.5 ->
15.6/14.9 s. JSON reports byte-identical (``check_profile_reports.py``, the 1 GB one by ``cmp``). The 57 MB
GPU capture (``bench_xprof_rs.py``'s), 9 pairs at load 0.9 -> 1.2: 0.79 -> 0.78 s median (0.74-0.82 vs
0.71-0.82), 238 -> 236 MB (2eaf502, with main's loader, 9 pairs at load 1.7-2.0: 0.87 vs 0.88 s): its analyses
are 0.13-0.17 s of it, within the noise. The x50 v6e capture, 7 pairs at load 1.2: 0.89 -> 0.84 s median, 278
MB both. The report's schema check there: importing jsonschema 0.024 s, validating 0.005 s
(``tpudoctor.schema``); kept on every run (it is what turns a malformed report into exit 3 rather than a wrong
file).

2026-12-05 19:10-19:45 UTC, the device ops' stats kept only at the events that carry them
(``LoadOptions.sparse_stats``: program_id as int8 codes, device_offset_ps/device_duration_ps at one array of rows,
hlo_category/hlo_op/tf_op/source as codes; the device ops' rows and device durations are those arrays), against
fa2e89a, the 1 GB capture, one run each at load 3.5-4.5 (this machine's other sessions and test runs)::

    phase                      peak / after MB (before)   peak / after MB (after)
    load_host                  1824 / 1789                1760 / 1431
    find_steps                 2174 / 2079                1770 / 1694    (the device op selection: 280 -> 253 MB kept)
    analyze_device_ops         2294 / 2093                1843 / 1712
    analyze_roofline           2349 / 2132                1883 / 1689    (the peak)

CPU per phase (``time.process_time``): loading 5.09 -> 4.51 s, the whole map 10.11 -> 9.52 s; find_steps
+0.19, the host ops +0.22, the collectives +0.11 s (the stats read at the ops' rows from the sparse stats,
``SparseStat._marked_positions``), the device ops -0.12 s. Whole ``profile analyze`` (``/usr/bin/time``, 2
alternating pairs at load 4.7-5.8, 19:51 UTC): peak RSS 2,401,640 and 2,405,444 -> 1,944,456 and 1,946,572 KB,
user 6.83/6.81 -> 7.70/7.43 s, sys 5.73/5.11 -> 3.25/3.04 s (fewer pages first touched), wall 20.5/27.1 ->
22.0/21.3 s; JSON reports identical (``cmp`` minus duration_s; ``check_profile_reports.py`` on every shared
capture, x50 and gpu30, both decoders). The x50 capture, 7 alternating pairs at load 3.2-3.9: peak RSS 274 ->
261 MB, user+sys median 0.82 -> 0.85 s, wall median 2.13 -> 2.18 s (1.78-2.70 against 1.64-2.71); in one
process, 6 alternating pairs at load 3.5-4.7, CPU of the load 0.352 -> 0.351 s and of the analyses 0.228 ->
0.222 s (medians).
After merging main (bd285b9: its loader's int16 ids and small pages), main against this tree, the 1 GB capture,
whole ``profile analyze``, 4 pairs at load 2.9-3.9 (20:00-20:03 UTC; two with main first, two with it second):
peak RSS 2,125,376 / 2,125,500 / 2,139,172 / 2,125,428 -> 1,870,916 / 1,872,380 / 1,870,164 / 1,870,064 KB;
user 5.45-5.72 -> 6.17-6.40 s, sys 2.65-2.92 -> 1.94-2.86 s; wall 10.1, 14.9, 9.4, 11.8 -> 15.7, 22.9, 8.9,
10.1 s (the order in a pair weighs more than the tree). The load alone (``capture_memory.py --baseline``, 2 pairs
at load 5.9-6.5): peak RSS 1.706 -> 1.733 GB (the sparse stats' row numbers beside their values while decoding),
after it 1.669 -> 1.495 GB, CPU 3.2-3.35 -> 3.6-3.7 s.
After merging main again (17f934d: its device ops of whole XLA Ops lines), 20:08-20:10 UTC at load 1.9, main
against this tree: load_host peak/after 1630/1595 -> 1518/1430 MB (CPU 2.99 -> 3.13 s), program_table (the device
op selection) keeps 262 -> 235 MB, the peak (analyze_roofline) 2114 -> 1856 MB, the analyses' CPU 2.02 -> 2.07 s;
whole ``profile analyze``, 2 pairs (main first, then second): peak RSS 2,071,824 / 2,071,876 -> 1,815,272 /
1,814,620 KB, wall 6.34 / 5.61 -> 5.80 / 5.85 s, user 3.94 / 3.90 -> 4.23 / 4.30 s, sys 2.34 / 1.68 -> 1.50 /
1.48 s; the x50 capture, 6 pairs at load 1.7-1.9: 215 -> 198 MB, user+sys median 0.575 -> 0.565 s, wall median
0.835 -> 0.745 s (0.73-0.91 against 0.65-0.93).
What stays over 1.5 GB: the events table's 29 bytes an event (start_ps and duration_ps 16, plane_id 2 and
plane_name 1 with 135 planes, line_id 4 (thread ids), line_name 2, metadata_id 2, name 2): 1.05 GB, of which
plane and line (9 bytes) are the same for every event of a line; the sparse stats 6.6 bytes an event (236 MB);
the load's end (meta_row, the decoder's fields beside the new columns: 330 MB over what it keeps); the device op
selection (start, self time, core, kinds, program codes: 22 bytes an op, 180 MB); and each analysis's per-op
temporaries (group keys, ids and a float per op: 150-200 MB over that).

2026-12-05 21:43 UTC, the line's own columns kept once per line (``LINE_COLUMNS``, ``HostProfile.line_values``)
and the analyses' per-op codes narrowed (396e725..93d5675), the 1 GB capture, 03a1ec9 then this tree, one run
each, back to back at load 2.3 -> 2.2 (``CPU s``, then ``peak / after MB``)::

                               03a1ec9                  after
    load_host                  3.36   1518 / 1428       2.84   1376 / 1116
    program_table              0.79   1687 / 1665       0.45   1351 / 1330   (the device op selection in it)
    find_steps                 0.17   1734 / 1695       0.07   1399 / 1358
    analyze_device_ops         0.65   1816 / 1661       0.46   1449 / 1324
    analyze_roofline           0.42   1855 / 1692       0.42   1503 / 1340   (the peak)
    the analyses together      2.74                     2.12
    analyze_host (the load too) 6.23  1855              5.06   1503

The events table 29 -> 20 bytes an event (1,046 -> 722 MB): start_ps and duration_ps 16, metadata_id 2, name 2.
The whole ``profile analyze`` (``/usr/bin/time``, load 1.8-2.5): peak RSS 1,815,128 / 1,815,252 -> 1,458,168 /
1,458,028 KB, wall 6.4-7.1 -> 5.5-5.6 s, user 4.5 -> 3.8 s. Its JSON report is 03a1ec9's but for duration_s
(``diff``), as are those of every shared capture, x50 and gpu30 (``check_profile_reports.py --baseline``).
What is left at the peak: the events 722 MB, the sparse stats 236 MB, the device op selection and program codes
(start 65, self time 65, core 8, kinds 8, programs 8 MB), and the roofline's per-op float and group keys (~135 MB).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import time

# (module, function) of every phase of analyze_host, in the order it runs them
PHASES = (
    ("tpudoctor.profile.capture", "load_host"),
    ("tpudoctor.profile.analysis", "capture_window_ps"),
    ("tpudoctor.profile.analysis", "device_kind"),
    ("tpudoctor.profile.analysis", "program_table"),
    ("tpudoctor.profile.analysis", "find_steps"),
    ("tpudoctor.profile.analysis", "analyze_recompilation"),
    ("tpudoctor.profile.analysis", "analyze_host_ops"),
    ("tpudoctor.profile.analysis", "analyze_input"),
    ("tpudoctor.profile.analysis", "step_time_stats"),
    ("tpudoctor.profile.analysis", "analyze_device_ops"),
    ("tpudoctor.profile.analysis", "host_collectives"),
    ("tpudoctor.profile.analysis", "_framework"),
    ("tpudoctor.profile.analysis.roofline", "analyze_roofline"),
    ("tpudoctor.profile.op_diff", "op_table"),
    ("tpudoctor.profile.summary", "summarize_host"),
    ("tpudoctor.profile.comparability", "capture_versions"),
    ("tpudoctor.profile.analysis.evidence", "evidence_of"),
)


def memory_mb() -> tuple[float, float]:
    """(peak RSS since the last reset, RSS now) in MB."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("VmHWM:", "VmRSS:")):
                found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return found["VmHWM"], found["VmRSS"]


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")


def instrument(rows: list[tuple[str, float, float, float, float]]) -> None:
    depth = [0]  # a phase called inside another (device_kind inside find_steps) is part of that one

    for module_name, name in PHASES:
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        @functools.wraps(original)
        def timed(*args, __original=original, __name=name, **kwargs):
            if depth[0]:
                return __original(*args, **kwargs)
            reset_peak()
            started, cpu = time.perf_counter(), time.process_time()
            depth[0] += 1
            try:
                return __original(*args, **kwargs)
            finally:
                depth[0] -= 1
                elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
                peak, now = memory_mb()
                rows.append((__name, elapsed, cpu, peak, now))

        setattr(module, name, timed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="one .xplane.pb")
    args = parser.parse_args()
    import tpudoctor.profile.analysis.evidence  # noqa: F401 - imported before the wrappers go in
    import tpudoctor.profile.analysis.roofline  # noqa: F401
    import tpudoctor.profile.comparability  # noqa: F401
    import tpudoctor.profile.op_diff  # noqa: F401
    import tpudoctor.profile.summary  # noqa: F401
    from tpudoctor.profile.pipeline import analyze_host

    rows: list[tuple[str, float, float, float, float]] = []
    instrument(rows)
    _, base = memory_mb()
    reset_peak()
    started, cpu = time.perf_counter(), time.process_time()
    result = analyze_host(args.path)
    total, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"{args.path}: {result.summary.n_events:,} events; RSS before {base:.0f} MB; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'phase':24s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>9s} {'after MB':>9s}")
    for name, elapsed, phase_cpu, peak, now in rows:
        print(f"{name:24s} {elapsed:8.2f} {phase_cpu:8.2f} {peak:9.0f} {now:9.0f}")
    analyses = [row for row in rows if row[0] != "load_host"]
    print(f"{'(the analyses)':24s} {sum(row[1] for row in analyses):8.2f} {sum(row[2] for row in analyses):8.2f}")
    print(f"{'analyze_host':24s} {total:8.2f} {cpu:8.2f} {max(row[3] for row in rows):9.0f} {memory_mb()[1]:9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
