"""The CPU meter of the reference runs, against real busy processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tpudoctor.reference_models.machine import CpuMeter

BUSY_LOOP = "import time\nend = time.perf_counter() + 1.5\nwhile time.perf_counter() < end: pass\n"


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the meter reads Linux's /proc/stat")
def test_other_processes_busy_on_every_cpu_take_most_of_the_machine():
    neighbours = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)  # let them start
        meter = CpuMeter()
        meter.start()
        time.sleep(0.8)  # this process idles while they spin
        shares = meter.stop()
    finally:
        for neighbour in neighbours:
            neighbour.wait()
    assert shares["others_cpu_share"] > 0.5
    assert 0.0 <= shares["steal_share"] < 0.5


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the meter reads Linux's /proc/stat")
def test_the_process_own_work_is_not_counted_as_others():
    """This process spins a core; what the others took is at most the rest of the machine. Where other work
    shares this process's core too (the suite's second worker, another job), the others take more than the rest in
    that window, so the quietest of three windows is the one judged."""
    others = []
    for _ in range(3):
        meter = CpuMeter()
        meter.start()
        end = time.perf_counter() + 0.6
        while time.perf_counter() < end:
            pass
        others.append(meter.stop()["others_cpu_share"])
    own_share = 1.0 / (os.cpu_count() or 1)
    assert min(others) < 1.0 - own_share + 0.05, others  # at most the rest of the machine


def test_stop_before_start_is_a_programming_error():
    with pytest.raises(RuntimeError):
        CpuMeter().stop()
