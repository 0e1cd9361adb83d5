"""The real compiler's out-of-memory listings round-trip: for each TPU generation, compile a program that does not
fit with libtpu on this (CPU) host, read libtpu's own log with tpudoctor's one OOM grammar (tpudoctor.logs.oom) and
hold what it reads against the compiler's other outputs:

* the header's used bytes against the error JAX raises (``... HLO temporaries (X) exceeds available HBM (Y)``);
* the ``Memory usage report``'s default-memory allocations against its own ``Total bytes`` and against the dumped
  buffer assignment's peak (tpudoctor.captures.hlo);
* its largest allocations against the dumped assignment's largest allocations (size for size).

    TPU_LOG_DIR=$(mktemp -d) .venv/bin/python benchmarks/oom_roundtrip.py [v4 v5e v5p v6e]

Needs jax[tpu] (libtpu); a few seconds a compile on 2 cores."""

from __future__ import annotations

import glob
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "preflight"))

# generation -> (topology, layers of examples/preflight/programs.py:mlp_adam that do not fit its HBM)
GENERATIONS = {"v4": ("v4:2x2x1", 8), "v5e": ("v5e:2x2", 4), "v5p": ("v5p:2x2x1", 16), "v6e": ("v6e:2x2", 8)}
TOP = 5


def _log_text(log_dir: str, offsets: dict[str, int]) -> str:
    """What libtpu's log files gained since the last call."""
    text = []
    for name in sorted(glob.glob(os.path.join(log_dir, "*"))):
        if os.path.islink(name) or not os.path.isfile(name) or ".INFO." not in name:
            continue
        with open(name, errors="replace") as fh:
            fh.seek(offsets.get(name, 0))
            text.append(fh.read())
            offsets[name] = fh.tell()
    return "\n".join(text)


def _total_bytes(log: str) -> int:
    """The last report's default memory ``Total bytes``."""
    return int(log.rsplit("Memory Space: default", 1)[1].split("Total bytes: ", 1)[1].split()[0])


def roundtrip(generation: str, log_dir: str, offsets: dict[str, int]) -> dict:
    import programs

    from tpudoctor.logs.oom import parse_oom_reports
    from tpudoctor.preflight import compiler

    topology, layers = GENERATIONS[generation]
    devices = compiler.topology_devices(topology)
    mesh = compiler.build_mesh(devices, {"data": 2, "model": len(devices) // 2})
    step, args = programs.mlp_adam(mesh, layers=layers)
    result = compiler.compile_for_topology(step, args)
    log = _log_text(log_dir, offsets)
    reports = [r for r in parse_oom_reports(log) if r.header is not None and r.header.memory_space == "hbm"]
    row = {"generation": generation, "topology": topology, "out_of_memory": result.out_of_memory,
           "seconds": round(result.seconds, 1), "reports": len(reports)}
    if not reports or result.plan is None:
        return row
    report = reports[-1]
    plan = result.plan
    tables = [a for a in report.allocations if a.memory_space == "hbm"]
    total = next((r for r in report.reconciliations if r.what.startswith("Memory usage report, hbm:")), None)
    plan_sizes = sorted((a.size_bytes for a in plan.allocations if a.size_bytes), reverse=True)
    row.update(
        header_used_bytes=report.header.used_bytes, error_required_bytes=result.required_bytes,
        header_matches_error=abs(report.header.used_bytes - (result.required_bytes or 0))
        <= 0.005 * (1 << 30),  # both print 2 decimals of a GiB
        tables=len(tables), tables_sum_bytes=total.listed_bytes if total else None,
        total_bytes=total.header_bytes if total else None, plan_peak_bytes=plan.peak_bytes,
        # within 1 % of Total bytes, or no reconciliation where the log cut the report short (glog's line limit)
        tables_equal_total=total.ok if total else "report cut by the log",
        total_equals_plan_peak=abs(_total_bytes(log) - plan.peak_bytes) <= 1e-4 * plan.peak_bytes,
        largest_tables=[a.size_bytes for a in tables[:TOP]], largest_plan=plan_sizes[:TOP],
        largest_equal=[a.size_bytes for a in tables[:TOP]] == plan_sizes[:TOP])
    return row


def main() -> int:
    from tpudoctor.preflight import compiler

    missing = compiler.compiler_missing()
    if missing:
        print(f"SKIP: {missing}")
        return 0
    log_dir = os.environ.get("TPU_LOG_DIR") or tempfile.mkdtemp(prefix="tpu-logs-")
    compiler.prepare_environment(log_dir)
    os.environ["TPU_LOG_DIR"] = log_dir
    offsets: dict[str, int] = {}
    ok = True
    for generation in sys.argv[1:] or list(GENERATIONS):
        row = roundtrip(generation, log_dir, offsets)
        print(row)
        ok &= all(row.get(key) for key in ("header_matches_error", "tables_equal_total", "total_equals_plan_peak",
                                           "largest_equal"))
    print("round-trip:", "every generation holds" if ok else "NOT every generation holds")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
