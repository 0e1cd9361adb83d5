"""How right `tpudoctor goodput` is on a frozen held-out set of training logs (tests/data/logs/training_heldout_N).

    python benchmarks/goodput_heldout_score.py            # set 2: one row per log and the total
    python benchmarks/goodput_heldout_score.py 3          # set 3
    python benchmarks/goodput_heldout_score.py 3 --quiet  # the total only
    python benchmarks/goodput_heldout_score.py 4          # set 4

Each log was labelled by hand (manifest.toml) and frozen (FROZEN.sha256) before the reader changed. A log is
right when every labelled fact matches: the number of step lines, the first and last step, the starts
(restarts = sessions - 1), a wall time exactly where the log has a clock (none where it has none), the ETTR
within the label's tolerance where one is labelled (and no ETTR where the log cannot give one), the error that
ended a crashed job, and on MLPerf logs the init and run durations to the millisecond. FIRST_SCORE.toml holds
the score taken before the change.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tpudoctor.goodput.analyze import analyze_paths

LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "logs"


def misses(log: dict, doc: dict) -> list[str]:
    """What the reading gets wrong against the hand labels (empty when right)."""
    g = doc["goodput"]
    out = []
    step_lines = doc["workers"][0]["step_lines"] if doc["workers"] else 0
    if step_lines != log["steps_logged"]:
        out.append(f"step lines {step_lines} != {log['steps_logged']}")
    if "first_step" in log and (g["first_step"], g["last_step"]) != (log["first_step"], log["last_step"]):
        out.append(f"steps {g['first_step']}..{g['last_step']} != {log['first_step']}..{log['last_step']}")
    if (g["restarts"] or 0) != log["sessions"] - 1:
        out.append(f"restarts {g['restarts']} != {log['sessions'] - 1}")
    if log["clock"] == "none" and (g["wall_s"] is not None or g["ettr"] is not None):
        out.append(f"a wall time {g['wall_s']} from a log with no clock")
    if log["clock"] != "none" and "wall_s" in log and g["wall_s"] is None:
        out.append("no wall time from a log with a clock")
    if "ettr" in log:
        if g["ettr"] is None:
            out.append(f"ETTR unknown, label {log['ettr']}")
        elif abs(g["ettr"] - log["ettr"]) > log["ettr_tolerance"]:
            out.append(f"ETTR {g['ettr']:.3f} != {log['ettr']} +- {log['ettr_tolerance']}")
    elif g["ettr"] is not None:
        out.append(f"ETTR {g['ettr']} where the log cannot give one")
    if log["crashed"] != bool(g["failures"]):
        out.append(f"failures {len(g['failures'])} but crashed={log['crashed']}")
    if log.get("mllog"):
        mllog = g.get("mllog") or {}
        if (mllog.get("init_ms"), mllog.get("run_ms")) != (log["init_ms"], log["run_ms"]):
            out.append(f"MLPerf init/run {mllog.get('init_ms')}/{mllog.get('run_ms')} ms != "
                       f"{log['init_ms']}/{log['run_ms']}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", nargs="?", type=int, default=2, help="the held-out set's number (default 2)")
    parser.add_argument("--quiet", action="store_true", help="print the total only")
    parser.add_argument("--dir", type=Path, help="a folder with manifest.toml and its logs (instead of a set)")
    args = parser.parse_args(argv)
    folder = args.dir or LOGS / f"training_heldout_{args.set}"
    if not (folder / "manifest.toml").is_file():
        parser.error(f"no manifest.toml in {folder}")
    args.dir = folder
    logs = tomllib.loads((args.dir / "manifest.toml").read_text(encoding="utf-8"))["log"]
    right = 0
    for log in logs:
        wrong = misses(log, analyze_paths([str(args.dir / log["file"])]))
        right += not wrong
        if not args.quiet:
            print(f"{'right' if not wrong else 'WRONG':5}  {log['file']}" + (f"  ({'; '.join(wrong)})" if wrong else ""))
    print(f"{right}/{len(logs)} right ({100 * right / len(logs):.0f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
