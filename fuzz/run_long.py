"""Run every fuzz target for many inputs and print how many ran and how each ended.

    .venv/bin/python fuzz/run_long.py                 # 2000 inputs per target
    .venv/bin/python fuzz/run_long.py --examples 200  # what CI's profile runs, for comparison

Targets take damaged real inputs (tests/fuzz/mutations.py) and hostile strings (control characters,
ESC/OSC, newlines, bidi overrides, HTML, Markdown: tests/fuzz/test_fuzz_rendering.py). An input may
only end as a result or a documented error (InputError/UsageError), and a rendered report must be safe
in its format; anything else stops the run with the input that broke.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "fuzz"), str(REPO / "tests")]

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mutations import damaged, time_bound  # noqa: E402

from tpudoctor.errors import InputError, UsageError  # noqa: E402


def targets(tmp: Path) -> dict:
    from test_fuzz_rendering import FORMATS, _assert_format, hostile_report
    from test_fuzz_reports import inputs as report_inputs

    from tpudoctor.bench.document import load_baseline
    from tpudoctor.config import load_config_file
    from tpudoctor.logdiag import diagnose_text
    from tpudoctor.profile.xspace import decode_host
    from tpudoctor.report_file import load_check_report

    captures = [p.read_bytes() for p in sorted((REPO / "tests" / "fixtures" / "profiles").glob("*/*.xplane.pb"))]
    real = REPO.parent / "shared" / "data" / "xprof_tpu_inference_2.xplane.pb"
    if real.is_file():
        captures.append(real.read_bytes())
    logs = [p.read_bytes() for p in sorted((REPO / "tests" / "data" / "logs").glob("*.log"))]
    config = b'project = "p"\nzone = "us-central2-b"\ntpu = "t"\ndata = ["gs://b/x"]\nsince = "2h"\n'

    def via_file(name: str, reader):
        def run(data: bytes):
            path = tmp / name
            path.write_bytes(data)
            return reader(path)
        return run

    def config_reader(data: bytes):
        (tmp / "tpudoctor.toml").write_bytes(data)
        return load_config_file(tmp)

    def merge_and_render(reports: list[bytes]):
        """``tpudoctor merge`` of damaged or hostile saved reports, rendered in every format."""
        from tpudoctor.pod.merge import merge_outcomes
        from tpudoctor.pod.report_store import read_reports
        from tpudoctor.rendering import render

        run = tmp / "run"
        run.mkdir(exist_ok=True)
        for old in run.iterdir():
            old.unlink()
        for i, data in enumerate(reports):
            (run / f"{i}.json").write_bytes(data)
        merged = merge_outcomes(read_reports([str(run)]))
        for fmt in FORMATS:
            _assert_format(fmt, render(merged.to_dict(), fmt))

    def render_everywhere(report):
        """A report with hostile strings in every outside field, in every format (checked, not only run)."""
        from tpudoctor.rendering import render

        for fmt in FORMATS:
            _assert_format(fmt, render(report.to_dict(), fmt, verbose=True))

    return {
        "xspace_loader": (damaged(captures), lambda d: decode_host(d, hostname="h", source="fuzz.xplane.pb")),
        "log_diagnosis": (damaged(logs), lambda d: diagnose_text(d.decode("utf-8", "replace"))),
        "check_report_reader": (report_inputs, via_file("report.json", load_check_report)),
        "bench_baseline_reader": (report_inputs, via_file("baseline.json", load_baseline)),
        "config_reader": (st.one_of(damaged([config]), st.binary(max_size=400)), config_reader),
        "merge_and_render": (st.lists(report_inputs, min_size=1, max_size=3), merge_and_render),
        "hostile_fields_every_format": (hostile_report(), render_everywhere),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="inputs per target (default 2000)")
    parser.add_argument("--only", action="append", default=[], help="run only this target; repeatable")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (strategy, fn) in targets(Path(tmp)).items():
            if args.only and name not in args.only:
                continue
            run = _runner(strategy, fn, args.examples)
            tally = run.tally
            started = time.monotonic()
            run()
            tally["wall_s"] = round(time.monotonic() - started, 1)
            rows.append({"target": name, **tally})
            print(json.dumps(rows[-1]), flush=True)
    print(f"total inputs: {sum(r['inputs'] for r in rows)}; every one ended in a result or a documented error")
    return 0


def _runner(strategy, fn, examples: int):
    tally = {"inputs": 0, "result": 0, "documented_error": 0, "slowest_s": 0.0}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(data):
        tally["inputs"] += 1
        started = time.monotonic()
        with time_bound():
            try:
                fn(data)
            except (InputError, UsageError):
                tally["documented_error"] += 1
            else:
                tally["result"] += 1
        tally["slowest_s"] = max(tally["slowest_s"], round(time.monotonic() - started, 3))

    run.tally = tally
    return run


if __name__ == "__main__":
    sys.exit(main())
