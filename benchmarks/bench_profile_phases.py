"""Where one host's analysis spends time and memory: wall time and peak RSS of each phase.

    .venv/bin/python benchmarks/bench_profile_phases.py FILE.xplane.pb
    .venv/bin/python benchmarks/bench_profile_phases.py /tmp/tpudoctor-capture-memory/capture_1024mb/host.xplane.pb

Runs the real per-host map (``tpudoctor.profile.pipeline.analyze_host``) with each of its phases
(loading, then every analysis it calls) wrapped: the wrapper resets the process's peak RSS
(``/proc/self/clear_refs``), runs the phase and prints its wall time, its own peak RSS (VmHWM) and
the RSS it leaves behind (a phase called inside another counts in that one; the device-op
selection, shared by the analyses of one host, counts in the first analysis that asks for it).
Linux only. The 1 GB capture is built by ``bench_profile_load.py --sizes-mb 1024``
(or ``capture_memory.py``).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import time

# (module, function) of every phase of analyze_host, in the order it runs them
PHASES = (
    ("tpudoctor.profile.capture", "load_host"),
    ("tpudoctor.profile.analysis", "capture_window_ps"),
    ("tpudoctor.profile.analysis", "device_kind"),
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


def instrument(rows: list[tuple[str, float, float, float]]) -> None:
    depth = [0]  # a phase called inside another (device_kind inside find_steps) is part of that one

    for module_name, name in PHASES:
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        @functools.wraps(original)
        def timed(*args, __original=original, __name=name, **kwargs):
            if depth[0]:
                return __original(*args, **kwargs)
            reset_peak()
            started = time.perf_counter()
            depth[0] += 1
            try:
                return __original(*args, **kwargs)
            finally:
                depth[0] -= 1
                elapsed = time.perf_counter() - started
                peak, now = memory_mb()
                rows.append((__name, elapsed, peak, now))

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

    rows: list[tuple[str, float, float, float]] = []
    instrument(rows)
    _, base = memory_mb()
    reset_peak()
    started = time.perf_counter()
    result = analyze_host(args.path)
    total = time.perf_counter() - started
    print(f"{args.path}: {result.summary.n_events:,} events; RSS before {base:.0f} MB")
    print(f"{'phase':24s} {'wall s':>8s} {'peak MB':>9s} {'after MB':>9s}")
    for name, elapsed, peak, now in rows:
        print(f"{name:24s} {elapsed:8.2f} {peak:9.0f} {now:9.0f}")
    print(f"{'analyze_host':24s} {total:8.2f} {max(row[2] for row in rows):9.0f} {memory_mb()[1]:9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
