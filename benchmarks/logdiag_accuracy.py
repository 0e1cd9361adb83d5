"""Top-1 accuracy of the log diagnosis over the real-world corpus, printed as a table.

    python benchmarks/logdiag_accuracy.py                  # tests/data/logs/real/corpus.toml
    python benchmarks/logdiag_accuracy.py --manifest other.toml --misses

Prints top-1 accuracy over the whole corpus, over the held-out (untuned) part and the tuned part,
per-class precision and recall, and the false-alarm rate on healthy runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tpudoctor.logdiag.accuracy import load_corpus, score_corpus

DEFAULT_MANIFEST = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs" / "real" / "corpus.toml"


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--misses", action="store_true", help="list the logs whose top diagnosis is wrong")
    args = parser.parse_args(argv)
    logs = load_corpus(args.manifest)
    report = score_corpus(logs)
    untuned = [s for s in report.scored if not s.log.tuned]
    tuned = [s for s in report.scored if s.log.tuned]
    healthy = report.healthy
    print(f"corpus: {args.manifest} ({len(logs)} logs: {len(untuned)} held out, {len(tuned)} tuned, "
          f"{len(healthy)} healthy)")
    print()
    print(f"{'top-1 accuracy, all logs':<40}{_pct(report.top1_accuracy)}  "
          f"({sum(s.correct for s in report.scored)}/{len(report.scored)})")
    print(f"{'top-1 accuracy, held out (untuned)':<40}{_pct(report.top1_accuracy_untuned)}  "
          f"({sum(s.correct for s in untuned)}/{len(untuned)})")
    print(f"{'top-1 accuracy, tuned':<40}{_pct(report.top1_accuracy_tuned)}  "
          f"({sum(s.correct for s in tuned)}/{len(tuned)})")
    print(f"{'healthy runs given FAIL (false alarm)':<40}{_pct(report.healthy_fail_rate)}  "
          f"({sum(s.predicted_status == 'FAIL' for s in healthy)}/{len(healthy)})")
    print(f"{'healthy runs given WARN':<40}{_pct(report.healthy_warn_rate)}  "
          f"({sum(s.predicted_status == 'WARN' for s in healthy)}/{len(healthy)})")
    print()
    print(f"{'class':<28}{'support':>8}{'predicted':>10}{'correct':>8}{'precision':>11}{'recall':>9}")
    for row in report.per_class():
        print(f"{row.name:<28}{row.support:>8}{row.predicted:>10}{row.correct:>8}"
              f"{_pct(row.precision):>11}{_pct(row.recall):>9}")
    if args.misses:
        print()
        for miss in report.misses():
            held = "held out" if not miss.log.tuned else "tuned"
            print(f"MISS ({held}) {miss.log.file.name}: expected {miss.log.expected}, got {miss.predicted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
