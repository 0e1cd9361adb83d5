"""Refuse, with a clear message, to load a capture this machine cannot hold, instead of being OOM-killed.

A loaded host is columnar in memory: ``benchmarks/capture_memory.py`` measures the peak RSS of a
full load (``tpudoctor.profile.load``, every stat a column) at 3.8-4.7x the file (80 MB -> 0.38 GB,
280 MB -> 1.13 GB, 1 GB -> 4.06 GB); the analysis read (``profile analyze``) stays near 2.3x
(``benchmarks/bench_profile_load.py``). The estimate uses the full load's ratio with some room.
"""

from __future__ import annotations

from tpudoctor.errors import InputError

LOAD_RSS_PER_FILE_BYTE = 5.0


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo; None where unknown (then nothing is refused)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def ensure_memory_for(size_bytes: int, location: str) -> None:
    available = available_memory_bytes()
    needed = int(size_bytes * LOAD_RSS_PER_FILE_BYTE)
    if available is not None and needed > available:
        raise InputError(
            f"{location} is {size_bytes / 1e9:.2f} GB; loading it needs about {needed / 1e9:.1f} GB of memory "
            f"(~{LOAD_RSS_PER_FILE_BYTE:g}x the file) and {available / 1e9:.1f} GB is available",
            hint="analyse it on a machine with more memory, or capture a shorter window (fewer steps)")
