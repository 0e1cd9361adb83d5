"""The memory preflight on the ten programs of examples/preflight/programs.py that do not fit on a v5e:2x2: for each,
the compiler's verdict, whether the top-ranked fix (applied and recompiled) fits, each verified fix's predicted
saving against the recompiled one, the attribution against the compiler's figures, and the time.

    .venv/bin/python benchmarks/preflight_programs.py                 # fixes screened, the best verified
    .venv/bin/python benchmarks/preflight_programs.py --verify -1     # every fix compiled at default effort
    .venv/bin/python benchmarks/preflight_programs.py --json out.json mlp_adam conv_net

Needs libtpu (pip install "tpudoctor[tpu-compile]"). Each program runs in this process, one after the other; time
is wall and CPU (process time: the compiler's threads included).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "examples" / "preflight" / "programs.py"
GIB = 1 << 30


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="programs (default: all ten)")
    parser.add_argument("--topology", default="v5e:2x2")
    parser.add_argument("--mesh", default="data=2,model=2")
    parser.add_argument("--verify", type=int, default=1, help="fixes verified at default effort (-1: all)")
    parser.add_argument("--json", default=None, help="write every report's document here")
    args = parser.parse_args(argv)

    from tpudoctor.memory.pipeline import parse_mesh
    from tpudoctor.preflight.analysis import preflight
    from tpudoctor.preflight.compiler import compiler_missing

    missing = compiler_missing()
    if missing:
        print(f"SKIP {missing}")
        return 0
    sys.path.insert(0, str(PROGRAMS.parent))
    from programs import PROGRAMS as NAMES  # noqa: E402 - the examples folder is not a package

    names = args.names or list(NAMES)
    mesh = parse_mesh(args.mesh)
    docs, rows = [], []
    for name in names:
        wall, cpu = time.perf_counter(), _cpu()
        report = preflight(f"{PROGRAMS}:{name}", args.topology, mesh=mesh,
                           verify=None if args.verify == -1 else args.verify)
        wall, cpu = time.perf_counter() - wall, _cpu() - cpu
        doc = report.to_dict()
        doc["wall_s"], doc["cpu_s"] = round(wall, 2), round(cpu, 2)
        docs.append(doc)
        top = report.fixes[0] if report.fixes else None
        compiler_figure = report.required_bytes or report.total_bytes
        rows.append({
            "program": name, "fits": report.fits, "needs_gib": (report.total_bytes or 0) / GIB,
            "top_fix": top.name if top else "-", "top_fits": bool(top and top.fits),
            "top_effort": top.effort if top else "-", "top_gib": (top.total_bytes or 0) / GIB if top else 0,
            "predicted_gib": None if not top or top.predicted_saving_bytes is None
            else top.predicted_saving_bytes / GIB,
            "compiled_gib": None if not top or top.compiled_saving_bytes is None else top.compiled_saving_bytes / GIB,
            "error": top.prediction_error if top else None,
            "attribution_vs_compiler": (report.attribution.peak_bytes / compiler_figure - 1)
            if report.attribution and compiler_figure else None,
            "named": report.attribution.named_fraction if report.attribution else None,
            "fixes": len(report.fixes), "compile_s": report.compile_seconds, "wall_s": wall, "cpu_s": cpu})
        print(_line(rows[-1]), flush=True)
    verified = [r for r in rows if r["top_effort"] == "default"]
    fitting = [r for r in rows if r["top_fits"] and r["top_effort"] == "default"]
    predicted = [r for r in verified if r["error"] is not None]
    print(f"\n{len(rows)} programs; does not fit as written: {sum(1 for r in rows if r['fits'] is False)}; "
          f"top-ranked fix recompiled at default effort fits: {len(fitting)}/{len(rows)}")
    print(f"top fixes with a prediction: {len(predicted)}; within 10 % of the recompile: "
          f"{sum(1 for r in predicted if r['error'] <= 0.10)}; worst {max((r['error'] for r in predicted), default=0):.1%}")
    worst = max((abs(r["attribution_vs_compiler"]) for r in rows if r["attribution_vs_compiler"] is not None),
                default=0)
    print(f"attribution vs the compiler's figure: worst {worst:.2%}; named: "
          f"{min((r['named'] for r in rows if r['named'] is not None), default=0):.0%} at least")
    print(f"per program: wall {min(r['wall_s'] for r in rows):.1f}-{max(r['wall_s'] for r in rows):.1f} s, "
          f"CPU {min(r['cpu_s'] for r in rows):.1f}-{max(r['cpu_s'] for r in rows):.1f} s; "
          f"total wall {sum(r['wall_s'] for r in rows):.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(docs, indent=1, default=str))
    return 0


def _line(r: dict) -> str:
    predicted = "-" if r["predicted_gib"] is None else f"{r['predicted_gib']:.2f}"
    compiled = "-" if r["compiled_gib"] is None else f"{r['compiled_gib']:.2f}"
    error = "-" if r["error"] is None else f"{r['error']:.1%}"
    attribution = "-" if r["attribution_vs_compiler"] is None else f"{r['attribution_vs_compiler']:+.3%}"
    return (f"{r['program']:<18} needs {r['needs_gib']:6.2f} GiB | top: {r['top_fix']:<16} "
            f"{'fits' if r['top_fits'] else 'NO  '} at {r['top_gib']:5.2f} ({r['top_effort']}) | saves "
            f"{compiled} GiB, predicted {predicted} ({error}) | attribution {attribution} | {r['fixes']} fixes, "
            f"compile {r['compile_s']:.1f} s, wall {r['wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
