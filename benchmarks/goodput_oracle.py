"""ml-goodput-measurement's own calculator beside ``tpudoctor goodput --goodput-job``, per scenario and bucket.

    python benchmarks/goodput_oracle.py

Each scenario (tpudoctor/testing/goodput_oracle.py) is recorded by the library's GoodputRecorder into a
loopback fake Cloud Logging; the library's GoodputCalculator and tpudoctor's CLI then read the same entries.
Prints seconds and percent of wall time from each side and the largest difference (needs the test extra).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    try:
        import ml_goodput_measurement  # noqa: F401
    except ImportError:
        sys.stderr.write("needs ml-goodput-measurement: pip install -e '.[test]'\n")
        return 2
    from importlib.metadata import version

    import ml_goodput_measurement as lib_pkg

    from tpudoctor.testing.fake_logging import FakeLoggingServer
    from tpudoctor.testing.goodput_oracle import LIBRARY_BUCKETS, SCENARIOS, side_by_side

    print(f"ml-goodput-measurement {version('ml-goodput-measurement')} ({Path(lib_pkg.__file__).parent.name}) "
          "vs tpudoctor goodput --goodput-job")
    worst_s = worst_pt = 0.0
    for scenario in SCENARIOS:
        with FakeLoggingServer(page_size=1000) as fake, tempfile.TemporaryDirectory() as out:
            os.environ["TPUDOCTOR_LOGGING_ENDPOINT"] = fake.endpoint
            started = time.perf_counter()
            lib, ours, inst = side_by_side(fake, scenario, Path(out))
            took = time.perf_counter() - started
        print(f"\n== {scenario}: {inst['entries']} entries, {took:.2f} s to record and read both ways")
        print(f"  {'figure':40s} {'library s':>11} {'tpudoctor s':>11} {'library %':>10} {'tpudoctor %':>11}")
        rows = [("wall", lib.wall_s, ours.wall_s, 100.0, 100.0),
                ("productive (goodput)", lib.productive_s, ours.productive_s, lib.goodput_percent,
                 ours.goodput_percent)]
        rows += [(b, lib.seconds[b], ours.seconds[b], lib.percent[b], ours.percent[b]) for b in LIBRARY_BUCKETS]
        rows += [(f"CUSTOM_BADPUT_EVENTS/{k}", v, ours.custom_s.get(k), None, None) for k, v in lib.custom_s.items()]
        for name, ls, ts, lp, tp in rows:
            worst_s = max(worst_s, abs(ls - ts)) if ts is not None else float("inf")
            if lp is not None:
                worst_pt = max(worst_pt, abs(lp - tp))
            pct = f"{lp:10.3f} {tp:11.3f}" if lp is not None else f"{'':10s} {'':11s}"
            print(f"  {name:40s} {ls:11.3f} {ts:11.3f} {pct}")
        print(f"  disruptions: library {lib.disruptions}, tpudoctor {ours.disruptions}; max productive step: "
              f"library {lib.max_productive_step}, tpudoctor {ours.max_productive_step}")
    print(f"\nlargest difference: {worst_s:.4f} s, {worst_pt:.4f} percentage points (tpudoctor rounds to 0.001 s "
          "and 0.01 points)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
