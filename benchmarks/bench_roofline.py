"""Roofline speed and memory: tpudoctor's analyze_roofline against xprof's roofline_model tool.

    .venv/bin/python benchmarks/bench_roofline.py [--source X.xplane.pb] [--scales 1,10,50] [--skip-xprof]

Scales the real v6e capture as bench_profile_load.py does (x50 is about 40 MB, 1.3 M events) and
runs each contender in its own subprocess on the same file, printing wall time and peak RSS:

* tpudoctor: ``tpudoctor.profile.load`` then ``analyze_roofline`` on the host (load and roofline
  timed apart; the roofline reuses the loaded tables);
* xprof ``roofline_model`` with ``use_saved_result=False`` on a fresh copy of the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_profile_load import (  # noqa: E402 - the repository root goes on the path first
    DEFAULT_SOURCE,
    PEAK_RSS,
    build_captures,
    run_child,
    run_xprof,
)

TPUDOCTOR_CHILD = PEAK_RSS + """
import json, sys, time
import tpudoctor.profile
from tpudoctor.profile.analysis.roofline import analyze_roofline
started = time.perf_counter()
capture = tpudoctor.profile.load(sys.argv[1])
host = next(iter(capture.hosts.values()))
loaded = time.perf_counter()
roofline = analyze_roofline(host)
done = time.perf_counter()
print(json.dumps({"load_s": loaded - started, "roofline_s": done - loaded, "peak_rss_mb": peak_rss_mb(),
                  "ops": len(roofline.ops), "events": len(host.events)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="real TPU capture to scale up")
    parser.add_argument("--scales", default="1,10,50", help="comma-separated event multipliers (default 1,10,50)")
    parser.add_argument("--skip-xprof", action="store_true", help="time tpudoctor only")
    args = parser.parse_args()
    if not args.source.exists():
        print(f"source capture {args.source} not found (it lives in ../shared/data)", file=sys.stderr)
        return 2
    paths = build_captures(args.source, [int(part) for part in args.scales.split(",")])
    print(f"{'scale':>5} {'MB':>6} {'events':>9} | {'load s':>7} {'roofline s':>10} {'RSS MB':>7} | "
          f"{'xprof s':>8} {'xprof RSS MB':>12}")
    for scale, path in paths.items():
        mine = run_child(TPUDOCTOR_CHILD, str(path))
        theirs = {} if args.skip_xprof else run_xprof(path, "roofline_model")
        if "error" in mine:
            print(f"x{scale}: tpudoctor failed: {mine['error']}")
            continue
        print(f"{scale:>5} {path.stat().st_size / 1e6:6.1f} {mine['events']:>9} | {mine['load_s']:7.2f} "
              f"{mine['roofline_s']:10.3f} {mine['peak_rss_mb']:7.0f} | "
              f"{theirs.get('wall_s', float('nan')):8.2f} {theirs.get('peak_rss_mb', float('nan')):12.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
