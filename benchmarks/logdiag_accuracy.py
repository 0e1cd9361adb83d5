"""How right the log diagnosis is on real logs, printed as a table.

    python benchmarks/logdiag_accuracy.py                  # the frozen held-out set first, then the tuned corpus
    python benchmarks/logdiag_accuracy.py --misses         # also list the misses of the tuned corpus
    python benchmarks/logdiag_accuracy.py --manifest other.toml --misses

The headline is the **first score of each frozen held-out set** (tests/data/logs/heldout/, heldout2/, heldout3/, heldout4/): logs copied
verbatim from public threads nobody here had used, frozen (FROZEN.sha256) before the change they could
inform, scored once (FIRST_SCORE.toml records that score and the commit it was taken on). The same set's
score now is shown beside it, then the tuned corpus (tests/data/logs/real/, whose logs tuned the catalog).
Misses of the held-out set are not listed unless asked (--heldout-misses): reading them is tuning.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tpudoctor.logdiag.accuracy import AccuracyReport, frozen_problem, load_corpus, score_corpus

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs"
TUNED_MANIFEST = DATA / "real" / "corpus.toml"
HELD_OUT = DATA / "heldout"
FIRST_SCORE = HELD_OUT / "FIRST_SCORE.toml"
HELD_OUT_SETS = (("held out", HELD_OUT), ("held out 2", DATA / "heldout2"), ("held out 3", DATA / "heldout3"),
                 ("held out 4", DATA / "heldout4"), ("held out 5", DATA / "heldout5"))


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f} %)" if whole else "-"


def row(name: str, report: AccuracyReport) -> str:
    scored = report.scored
    return (f"{name:<44}{len(scored):>5}  {_pct(sum(s.correct for s in scored), len(scored)):<18}"
            f"{_pct(len(report.failing_called_pass), len(report.failing)):<16}"
            f"{_pct(len(report.healthy_alarms), len(report.healthy)):<20}{len(report.unknown):>8}")


HEADER = (f"{'set':<44}{'logs':>5}  {'top-1 right':<18}{'failing: PASS':<16}{'healthy: WARN/FAIL':<20}"
          f"{'unknown':>8}")


def per_class(report: AccuracyReport) -> None:
    print(f"{'class':<28}{'support':>8}{'predicted':>10}{'correct':>8}{'precision':>11}{'recall':>9}")
    for c in report.per_class():
        pct = lambda v: "   -  " if v is None else f"{100 * v:5.1f}%"  # noqa: E731
        print(f"{c.name:<28}{c.support:>8}{c.predicted:>10}{c.correct:>8}{pct(c.precision):>11}{pct(c.recall):>9}")


def misses(report: AccuracyReport) -> None:
    for miss in report.misses():
        held = "held out" if not miss.log.tuned else "tuned"
        print(f"MISS ({held}) {miss.log.file.name}: expected {miss.log.expected}, got {miss.predicted}")


def _first_score_rows(name: str, first: dict | None) -> None:
    """The frozen first score (the headline), its uncontaminated part and the score before a change, as recorded."""
    if not first:
        return
    logs, failing, healthy = first["logs"], first["failing"], first["healthy"]
    print(f"{name + ', FIRST SCORE (' + first['commit'][:8] + ')':<44}{logs:>5}  "
          f"{_pct(first['top1_right'], logs):<18}{_pct(first['failing_called_pass'], failing):<16}"
          f"{_pct(first['healthy_alarms'], healthy):<14}")
    for key, label in (("clean", "first score, uncontaminated logs"), ("before", "before the change")):
        if key in first:
            part = first[key]
            commit = f" ({part['commit'][:8]})" if "commit" in part else ""
            n, f, h = part.get("logs", logs), part.get("failing", failing), part.get("healthy", healthy)
            print(f"{name + ', ' + label + commit:<44}{n:>5}  {_pct(part['top1_right'], n):<18}"
                  f"{_pct(part['failing_called_pass'], f):<16}{_pct(part['healthy_alarms'], h):<14}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, help="score this manifest only")
    parser.add_argument("--misses", action="store_true", help="list the misses of the tuned corpus")
    parser.add_argument("--heldout-misses", action="store_true",
                        help="list the held-out misses too (whoever reads them can no longer call the set held out)")
    args = parser.parse_args(argv)
    if args.manifest:
        report = score_corpus(load_corpus(args.manifest))
        print(HEADER)
        print(row(str(args.manifest), report))
        print()
        per_class(report)
        if args.misses:
            misses(report)
        return 0

    tuned = score_corpus(load_corpus(TUNED_MANIFEST))
    print("Log diagnosis accuracy: top-1 right = the first finding is the class the thread settled on")
    print("('none' for a healthy run); failing: PASS = a failed run with no finding at all; unknown = a short excerpt")
    print("with no failure and no sign of health, told as 'cannot tell' (a WARN that is no alarm, and no PASS).")
    print()
    print(HEADER)
    held_out_reports = []
    for name, folder in HELD_OUT_SETS:
        held_out = score_corpus(load_corpus(folder / "manifest.toml"))
        held_out_reports.append(held_out)
        first_file = folder / "FIRST_SCORE.toml"
        first = tomllib.loads(first_file.read_text(encoding="utf-8")) if first_file.exists() else None
        _first_score_rows(name, first)
        tuned_on = (first or {}).get("after", {}).get("tuned_on", [])
        print(row(f"{name}, now ({len(tuned_on)} tuned on since)" if tuned_on else f"{name}, now", held_out))
    print(row("tuned corpus (tests/data/logs/real)", tuned))
    print()
    for name, folder in HELD_OUT_SETS:
        problem = frozen_problem(folder)
        print(f"{name}: {folder.relative_to(DATA.parents[1])}, "
              + (f"NOT AS FROZEN: {problem}" if problem else "every file as frozen (FROZEN.sha256)"))
    print()
    print("tuned corpus, per class:")
    per_class(tuned)
    if args.misses:
        print()
        misses(tuned)
    if args.heldout_misses:
        for held_out in held_out_reports:
            print()
            misses(held_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
