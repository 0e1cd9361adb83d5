"""Time and peak RSS of each per-host analysis of one capture, as ``host_result`` runs them.

    .venv/bin/python benchmarks/bench_profile_analyses.py CAPTURE.xplane.pb

Loads the host with the analysis stats, then runs the analyses in one ``sharing_device_ops`` block
(the device ops selected once, as in ``host_result``) and prints, per phase, its wall time, its peak
RSS (VmHWM, reset before each phase: Linux only) and the RSS after it. The last line gives the
RSS once the block ends (the shared selection is dropped), then the analyses' total time.
Big captures: ``benchmarks/capture_memory.py`` builds them (1 GB is about 36 M events).
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path


def _rss_mb() -> tuple[float, float]:
    """(peak since the last reset, now) in MB, from /proc/self/status."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmHWM:", "VmRSS:")):
            found[line.split(":")[0]] = int(line.split()[1]) / 1024
    return found["VmHWM"], found["VmRSS"]


def _reset_peak() -> None:
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", help="one host's .xplane.pb")
    args = parser.parse_args()

    from tpudoctor.profile.analysis import (
        _framework,
        collectives,
        device_ops,
        host_ops,
        input_bound,
        recompilation,
        steps,
    )
    from tpudoctor.profile.analysis.events import capture_window_ps, device_kind, sharing_device_ops
    from tpudoctor.profile.analysis.events import device_ops as select_device_ops
    from tpudoctor.profile.analysis.roofline import analyze_roofline
    from tpudoctor.profile.capture import load_host
    from tpudoctor.profile.comparability import capture_versions
    from tpudoctor.profile.op_diff import op_table
    from tpudoctor.profile.sources import HostFile
    from tpudoctor.profile.summary import summarize_host
    from tpudoctor.profile.xspace import ANALYSIS_STAT_COLUMNS

    last = [time.perf_counter()]
    spent: dict[str, float] = {}

    def phase(name: str) -> None:
        peak, now = _rss_mb()
        spent[name] = time.perf_counter() - last[0]
        print(f"{name:24s} {spent[name]:6.2f} s  peak {peak:7.0f} MB  after {now:7.0f} MB", flush=True)
        _reset_peak()  # not timed: the garbage collection between phases
        last[0] = time.perf_counter()

    _reset_peak()
    host = load_host(HostFile("host", args.capture), None, ANALYSIS_STAT_COLUMNS)
    phase(f"load ({len(host.events):,} events)")
    with sharing_device_ops(host):
        window, kind = capture_window_ps(host), device_kind(host)
        phase("window, device kind")
        found = steps.find_steps(host)
        phase("find_steps")
        compiles = recompilation.analyze_recompilation(host, window)
        phase("recompilation")
        select_device_ops(host)
        phase("select device ops")
        host_side = host_ops.analyze_host_ops(host, window)
        phase("host_ops")
        input_bound.analyze_input(host, found, device=kind, compile_intervals=compiles.intervals,
                                  callback_intervals=host_side.callback_intervals)
        phase("input")
        device_ops.analyze_device_ops(host)
        phase("device_ops")
        collectives.host_collectives(host, found, "host")
        phase("collectives")
        _framework(host)
        phase("framework")
        roofline = analyze_roofline(host)
        phase("roofline")
        op_table(host, roofline)
        phase("op_table")
        summarize_host(host)
        capture_versions(host)
        phase("summary, versions")
    phase("selection dropped")
    print(f"analyses {sum(list(spent.values())[1:]):.2f} s (the phases after the load)")


if __name__ == "__main__":
    main()
