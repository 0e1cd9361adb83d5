"""``tpudoctor diag -r 3 --distributed``: two real processes joined by ``jax.distributed`` on loopback (gloo
collectives on CPU, four virtual devices each) time the all-reduce across them, as the workers of two slices would;
flags that do not go together are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tpudoctor import cli
from tpudoctor.schema import validate
from tpudoctor.testing.loopback import free_port

SMALL = ["--cpu-devices", "4", "--reps", "3", "--hbm-gib", "0.01", "--soak", "2s"]


def test_two_processes_time_the_all_reduce_across_them(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    procs = []
    for pid in range(2):
        argv = [sys.executable, "-m", "tpudoctor", "diag", "-r", "3", *SMALL, "--distributed",
                "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(pid),
                "--format", "json", "-o", str(tmp_path / f"diag-{pid}.json")]
        procs.append(subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=420))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for pid, proc in enumerate(procs):
        assert proc.returncode in (0, 1), outputs[pid][1][-3000:]
        doc = json.loads((tmp_path / f"diag-{pid}.json").read_text())
        validate(doc, "diag_report")
        assert len(doc["devices"]) == 4  # each process judges its own chips
        dcn = doc["dcn"]
        assert dcn["across"] == "processes" and dcn["groups"] == 2 and dcn["process_count"] == 2
        assert dcn["bus_gbps_median"] > 0 and dcn["bytes_per_device"] == 2**22
        (finding,) = [f for f in doc["findings"] if f["id"] == "dcn-allreduce"]
        assert finding["status"] == "PASS" and "across 2 processes" in finding["message"]
        assert finding["evidence"]["confidence"] == "unknown"  # no published DCN figure for a CPU


def test_one_process_r3_skips_the_dcn_test_saying_how_to_run_it(capsys, tmp_path):
    from tpudoctor.diag.rule import example_input
    from tpudoctor.diag.rules.dcn_allreduce import DcnAllReduceAcrossSlices
    from tpudoctor.rule import evaluate_rule

    finding = evaluate_rule(DcnAllReduceAcrossSlices, example_input(8, level=3))
    assert finding.status.value == "SKIP" and "joined no multi-process JAX run" in finding.message
    assert "--distributed on every worker" in finding.evidence["would_tell"]
    assert not DcnAllReduceAcrossSlices().applies(example_input(8, level=2))


@pytest.mark.parametrize("argv, words", [
    (["-r", "2", "--distributed"], "an r3 test"),
    (["-r", "3", "--coordinator", "127.0.0.1:1"], "go with --distributed"),
    (["-r", "3", "--distributed", "--coordinator", "127.0.0.1:1"], "go together"),
    (["-r", "3", "--distributed", "--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"],
     "0..1"),
])
def test_flags_that_do_not_go_together_exit_2(capsys, argv, words):
    code = cli.main(["diag", *argv])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err
