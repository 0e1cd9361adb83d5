"""How often the diff against the last good run ranks the failure's own line among its top 3 new templates, on
the pairs of tests/data/logs/baseline_pairs/ (real runs of benchmarks/baseline_job.py, good and failing).

    python benchmarks/baseline_diff_accuracy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tpudoctor.logdiag.baseline import compare_files

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs" / "baseline_pairs"


def main() -> int:
    pairs = tomllib.loads((PAIRS / "manifest.toml").read_text(encoding="utf-8"))["pair"]
    top1 = top3 = 0
    for pair in pairs:
        diff = compare_files(PAIRS / f"{pair['kind']}.bad.log", PAIRS / f"{pair['kind']}.good.log")
        ranks = [i for i, d in enumerate(diff.ranked) if pair["failure"] in d.first_line]
        rank = ranks[0] + 1 if ranks else None
        top1 += rank == 1
        top3 += rank is not None and rank <= 3
        print(f"{pair['kind']:<20} rank {rank if rank else '-':>2} of {len(diff.ranked):>3} new/more frequent "
              f"templates ({diff.templates_failing} in the failing run, {diff.templates_good} in the good run)")
    print(f"\nfailure's line first: {top1}/{len(pairs)}; in the top 3: {top3}/{len(pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
