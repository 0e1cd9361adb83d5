"""Peak memory of loading a large capture, against its file size: states the bound k = peak RSS / size.

    .venv/bin/python benchmarks/capture_memory.py                      # 64 MB, 256 MB and 1 GB
    .venv/bin/python benchmarks/capture_memory.py --sizes-mb 64,256

The capture is the real v6e inference capture (../shared/data/xprof_tpu_inference_2.xplane.pb)
with every line's events repeated 50x (benchmarks/make_big_capture.py, realistic event density),
then that XSpace repeated until the wanted size (serialized XSpaces concatenate into one whose
planes repeat). Each load runs in a fresh subprocess so its peak RSS (VmHWM, Linux) is its own.
``--stats analysis`` loads only the stats ``profile analyze`` reads; ``--checkout`` another checkout's tpudoctor.
``table_bytes_per_event`` counts the events table's buffers (each once, all-missing views none); RSS can be
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
import json, sys, time
def status_bytes(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
import tpudoctor.profile
from tpudoctor.captures.xspace import LoadOptions
sys.path.append(sys.argv[3])
from capture_memory import table_bytes
base = status_bytes("VmHWM")
t = time.monotonic()
options = LoadOptions.for_analysis() if sys.argv[2] == "analysis" else LoadOptions()
capture = tpudoctor.profile.load(sys.argv[1], options=options)
seconds = time.monotonic() - t
host = next(iter(capture.hosts.values()))
events = len(host.events)
tables = table_bytes(host.events)
print(json.dumps({"seconds": round(seconds, 1), "events": events, "peak_rss_bytes": status_bytes("VmHWM"),
                  "rss_before_load_bytes": base, "rss_after_load_bytes": status_bytes("VmRSS"),
                  "events_table_bytes": tables, "table_bytes_per_event": round(tables / max(events, 1), 1)}))
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
    parser.add_argument("--stats", choices=("all", "analysis"), default="all",
                        help="every stat a column (tpudoctor.profile.load's default), or only those profile analyze reads")
    args = parser.parse_args()
    if not SOURCE.is_file():
        sys.exit(f"{SOURCE} is absent (the real captures live beside the checkout in ../shared/data)")
    args.folder.mkdir(exist_ok=True)
    for size_mb in (int(s) for s in args.sizes_mb.split(",")):
        path = build(size_mb << 20, args.folder)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(path), args.stats, str(REPO / "benchmarks")],
                              capture_output=True, text=True, cwd=args.checkout,
                              env={**os.environ, "PYTHONPATH": str(args.checkout)})
        if proc.returncode:
            print(json.dumps({"file_mb": size_mb, "error": proc.stderr.strip().splitlines()[-1:]}))
            continue
        row = json.loads(proc.stdout)
        size = path.stat().st_size
        row.update(file_bytes=size, k_peak_rss_per_file_byte=round(row["peak_rss_bytes"] / size, 2),
                   k_load_growth_per_file_byte=round((row["peak_rss_bytes"] - row["rss_before_load_bytes"]) / size, 2))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
