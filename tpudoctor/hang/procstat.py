"""What the kernel says about a process: its state, its CPU time, and how often each thread ran.

A thread's context-switch count (``/proc/PID/task/TID/status``) that does not move between two readings
means the thread did not run once in between: it is frozen, whatever its stack says. One that moves
proves little (a collective's wait wakes up several times a second to check for a timeout).
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from tpudoctor.hang.model import Counters

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
STATES = {"R": "running", "S": "sleeping", "D": "in uninterruptible I/O", "T": "stopped", "t": "stopped by a tracer",
          "Z": "a zombie (exited, not reaped)", "X": "dead", "I": "idle"}


def read_counters(pid: int) -> Counters | None:
    """None when the process is gone."""
    taken_at = _dt.datetime.now(_dt.timezone.utc)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    state = fields[0]
    cpu_s = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime
    switches = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tids = []
    for tid in tids:
        count = _switches(Path(f"/proc/{pid}/task/{tid}/status"))
        if count is not None:
            switches[int(tid)] = count
    return Counters(taken_at=taken_at, state=state, cpu_s=cpu_s, switches=switches)


def _switches(path: Path) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    total = 0
    for line in text.splitlines():
        if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
            total += int(line.split()[1])
    return total
