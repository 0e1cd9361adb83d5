"""``tpudoctor diag`` as a Python API, no command line: ``tpudoctor.diag.product.run(inputs, options, progress)``
with ``DiagRunOptions.from_args`` building the options from the parsed flags and resolved settings. The
measurement runs JAX on CPU devices in a fresh process (XLA reads the device count once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tpudoctor.cli import build_parser
from tpudoctor.diag import product
from tpudoctor.errors import UsageError
from tpudoctor.settings import Settings


def _options(*argv: str) -> product.DiagRunOptions:
    args = build_parser().parse_args(["diag", *argv])
    return product.DiagRunOptions.from_args(args, Settings.resolve(args, args.settings_spec, environ={}, config={}))


@pytest.mark.parametrize("argv, message", [
    (("-r", "1", "--inject", "slow:1:0.1"), "--inject"),
    (("-r", "2", "--reps", "2"), "--reps must be at least 3"),
    (("-r", "2", "--expect-chips", "0"), "--expect-chips must be at least 1"),
    (("-r", "2", "--cpu-devices", "0"), "--cpu-devices must be at least 1"),
    (("-r", "2", "--distributed"), "an r3 test"),
    (("-r", "3", "--soak", "0s"), "the soak must last more than 0 s"),
])
def test_options_refuse_bad_flags_with_a_usage_error(argv, message):
    with pytest.raises(UsageError) as raised:
        _options(*argv)
    assert message in raised.value.message


def test_options_of_a_fan_out_carry_each_workers_command_and_run_reads_no_files():
    options = _options("-r", "2", "--tpu", "pod", "--zone", "us-central2-b", "--workers", "0-1", "--reps", "9")
    assert options.fan_out is not None and options.measure.reps == 9 and options.measure.level == 2
    argv = options.worker_argv("1")
    parsed = build_parser().parse_args(argv[1:])
    assert "--worker=1" in argv and (parsed.level, parsed.reps, parsed.workers) == (2, 9, None)
    with pytest.raises(UsageError):
        product.run(["notes.txt"], options, None)


RUN_R1 = """
import json, sys
from tpudoctor.cli import build_parser
from tpudoctor.diag.product import DiagRunOptions, run
from tpudoctor.settings import Settings
args = build_parser().parse_args(["diag", "-r", "1", "--cpu-devices", "3", "--expect-chips", "4"])
options = DiagRunOptions.from_args(args, Settings.resolve(args, args.settings_spec, environ={}, config={}))
said = []
report = run([], options, said.append)
print(json.dumps({"findings": [f.to_dict() for f in report.findings], "said": said, "chips": len(report.chips)}))
"""


@pytest.mark.slow
def test_run_r1_on_three_cpu_devices_names_the_missing_fourth_chip():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    done = subprocess.run([sys.executable, "-c", RUN_R1], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    found = {f["id"]: f for f in out["findings"]}
    assert found["chips-enumerate"]["status"] == "FAIL" and "3 of 4" in found["chips-enumerate"]["message"]
    assert out["chips"] == 3 and "node and runtime checks" in out["said"]
