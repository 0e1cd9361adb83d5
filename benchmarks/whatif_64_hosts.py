"""The straggler what-if on 64 hosts x 100 steps (synthetic timelines through the same simulator).

    .venv/bin/python benchmarks/whatif_64_hosts.py

Builds the map tables of 64 hosts (4 chips each, 2 collectives per step, one host 5 ms slow before
every collective, 0-1 ms noise everywhere), then times ``straggler_whatif`` (alignment, clock
offsets, the replay of the measured chain, the ideal and one what-if per host and per chip: 322
scenarios) and prints the figure. The target is under 10 s."""

from __future__ import annotations

import time

from tpudoctor.profile.analysis.whatif import straggler_whatif
from tpudoctor.profile.analysis.whatif_synthetic import synthetic_tables

HOSTS, STEPS, CHIPS, TARGET_S = 64, 100, 4, 10.0


def main() -> int:
    tables = synthetic_tables(HOSTS, STEPS, chips=CHIPS, noise_ms=1.0)
    started = time.perf_counter()
    result = straggler_whatif(tables)
    elapsed = time.perf_counter() - started
    top = result.per_host.sort_values("saved_ms", ascending=False).iloc[0]
    print(f"{HOSTS} hosts x {CHIPS} chips x {STEPS} steps ({result.devices} devices, "
          f"{int(result.collectives_per_step * result.steps)} sync points): {elapsed:.2f} s "
          f"(target < {TARGET_S:.0f} s)")
    print(f"step {result.simulated_step_ms:.2f} ms (measured {result.measured_step_ms:.2f}), ideal "
          f"{result.ideal_step_ms:.2f}; {top['host']} saves {top['saved_ms']:.2f} ms "
          f"({top['saved_percent']:.1f}%), share {top['slowdown_share']:.2f}")
    return 0 if elapsed < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
