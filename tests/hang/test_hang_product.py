"""``tpudoctor hang`` as a Python API, no command line: ``tpudoctor.hang.product.run(inputs, options, progress)``
on the real ``--dump-dir`` captures of tests/data/hang (a job hung in its checkpoint write), and on the report a
worker wrote (``--merge``: the inputs), with ``HangRunOptions.from_args`` building the options."""

from __future__ import annotations

import json

import pytest
from paths import TESTS

from tpudoctor.cli import build_parser
from tpudoctor.documents import prepare
from tpudoctor.errors import UsageError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.findings import exit_code_for
from tpudoctor.hang import product
from tpudoctor.hang.report import HangReport
from tpudoctor.settings import Settings

CHECKPOINT = TESTS / "data" / "hang" / "checkpoint"


def _options(*argv: str) -> product.HangRunOptions:
    args = build_parser().parse_args(["hang", *argv])
    return product.HangRunOptions.from_args(args, Settings.resolve(args, args.settings_spec, environ={}, config={}))


def test_run_replays_a_capture_hung_in_its_checkpoint_write():
    report = product.run([], _options("--replay", str(CHECKPOINT), "--worker", "2"), None)
    assert isinstance(report, HangReport)
    assert report.verdict == "hung" and report.decision is not None and report.root_cause is not None
    assert report.root_cause.category == "checkpoint" and report.target.worker == "2"
    assert exit_code_for(report) is ExitCode.FINDINGS and report.duration_s > 0


def test_run_merges_the_reports_its_inputs_name(tmp_path):
    worker = product.run([], _options("--replay", str(CHECKPOINT)), None)
    written = tmp_path / "3.json"
    written.write_text(json.dumps(prepare(worker, redact=False)))
    merged = product.run([str(written)], _options("--merge", str(written)), None)
    assert merged.verdict == "hung" and list(merged.workers) == ["3"]
    assert merged.environment["source"] == str(written)
    assert [f.status.value for f in merged.findings if f.id == "HANG-001"] == ["FAIL"]


@pytest.mark.parametrize("argv, message", [
    (("--replay", str(CHECKPOINT), "--pid", "12"), "--replay reads a saved capture"),
    (("--stacks", "a.txt", "--merge", "b.json"), "--stacks reads dumps already taken"),
    (("--merge", "b.json", "--pid", "12"), "--merge reads the workers' reports"),
    (("--pid", "0"), "--pid 0: not a valid process id"),
    (("--dump-timeout", "0s"), "--dump-timeout must be positive"),
    (("--tz", "Mars/Olympus"), "--tz"),
])
def test_options_refuse_bad_flags_with_a_usage_error(argv, message):
    with pytest.raises(UsageError) as raised:
        _options(*argv)
    assert message in raised.value.message


def test_a_fan_out_is_made_only_when_the_run_starts_and_carries_each_workers_command():
    options = _options("--tpu", "pod", "--zone", "us-central2-b", "--workers", "0-3", "--interval", "2s")
    assert options.fan_out is not None and options.tz is None  # the workers read their own logs' zone
    argv = options.worker_argv("1")
    parsed = build_parser().parse_args(argv[1:])
    assert "--worker=1" in argv and parsed.interval == "2s" and parsed.workers is None
