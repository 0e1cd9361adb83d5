"""Print how `tpudoctor hang --stacks` scores on the frozen held-out set of real stack dumps
(tests/data/hang/heldout): the first score (recorded before any rule change) and the score now.

    python benchmarks/hang_stacks_accuracy.py [--set DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tpudoctor.hang.accuracy import score_heldout

HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "hang" / "heldout"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=HELDOUT)
    args = parser.parse_args(argv)
    first = tomllib.loads((args.set / "FIRST_SCORE.toml").read_text(encoding="utf-8"))
    now = score_heldout(args.set)
    print(f"{'':24} {'category right':>16} {'odd one out right':>18} {'parse failures':>15} {'unknown→HIGH':>13}")
    print(f"{'first (' + first['commit'] + ')':24} {first['category_right']:>10} of {first['labelled']:<3} "
          f"{first['odd_one_out_right']:>12} of {first['sets']:<3} {first['parse_failures']:>15} "
          f"{first['unknown_given_high']:>13}")
    print(f"{'now':24} {now.category_right:>10} of {now.labelled:<3} {now.odd_one_out_right:>12} of "
          f"{len(now.sets):<3} {now.parse_failures:>15} {now.unknown_given_high:>13}")
    tuned = first.get("after", {}).get("tuned_on", [])
    if tuned:
        print(f"read and tuned on after the first score (no longer held out): {', '.join(tuned)}")
    print()
    for s in now.sets:
        mark = {True: "right", False: "WRONG", None: "unscored"}[s.category_right]
        print(f"  {s.name:52} {s.label:>10} -> {s.said:<13} ({s.confidence}) {mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
