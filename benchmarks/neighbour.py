"""A noisy neighbour for the benchmarks that measure under load: one core busy ON seconds in every ON+OFF."""

from __future__ import annotations

import subprocess
import sys

BURST = """
import sys, time
on, off = float(sys.argv[1]), float(sys.argv[2])
while True:
    until = time.perf_counter() + on
    while time.perf_counter() < until:
        pass
    time.sleep(off)
"""


def start_bursts(spec: str) -> subprocess.Popen:
    """A process that keeps one core busy for ON seconds, then idles OFF seconds, over and over (``spec`` is
    ``ON:OFF``): load that comes and goes on the scale of one measurement."""
    on, off = spec.split(":")
    return subprocess.Popen([sys.executable, "-c", BURST, on, off])
