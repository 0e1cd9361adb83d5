"""``tpudoctor diag --workers`` runs through the one fan-out on the fake slice of tests/pod_slice.py (each worker a
real ``tpudoctor diag`` with JAX on two virtual CPU devices): the merged report holds every worker's findings
scoped to it, its chips named by worker, the diag flags reached every worker, and an unreachable worker is a
finding naming it."""

from __future__ import annotations

import json

from pod_slice import build_slice

from tpudoctor.cli import build_parser, main
from tpudoctor.diag.slice import slice_peers
from tpudoctor.schema import validate

ZONE = "us-central2-b"


def test_diag_on_the_workers_of_a_slice_is_merged_with_each_finding_scoped(monkeypatch, tmp_path):
    root = tmp_path / "slice"
    for key, value in build_slice(root, 3, unreachable={2}).items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "merged.json"
    code = main(["diag", "-r", "1", "--tpu", "pod", "--zone", ZONE, "--workers", "0-2", "--cpu-devices", "2",
                 "--expect-chips", "2", "--worker-timeout", "200s", "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    validate(doc, "diag_report")
    assert code == 1  # worker 2 gave no report
    backend = [f for f in doc["findings"] if f["id"] == "backend-loads"]
    assert sorted(w for f in backend for w in f["scope"]["workers"]) == ["0", "1"]
    assert {f["status"] for f in backend} == {"PASS"}
    assert sorted({row["worker"] for row in doc["chips"]}) == ["0", "1"] and len(doc["chips"]) == 4
    unreachable = [f for f in doc["findings"] if f["scope"]["workers"] == ["2"]]
    assert unreachable and unreachable[0]["status"] in ("FAIL", "ERROR")
    for line in (root / "gcloud-calls.jsonl").read_text().splitlines():
        argv = json.loads(line)["argv"]
        command = argv[argv.index("--command") + 1] if "--command" in argv else " ".join(argv)
        if "tpudoctor diag" in command:
            assert "--level=1" in command and "--cpu-devices=2" in command and "--format=json" in command


def test_a_chip_that_trails_the_slice_is_named_with_its_worker():
    rows = [{"worker": str(w), "chip": f"tpu:{c}", "matmul_tflops_median": 900.0 + c} for w in range(4) for c in range(4)]
    rows[9]["matmul_tflops_median"] = 780.0
    finding = slice_peers(rows)
    assert finding.status.value == "FAIL" and finding.scope.workers == ("2",) and finding.scope.chips == ("tpu:1",)
    assert slice_peers(rows[:8] + rows[10:]).status.value == "PASS"


def test_the_worker_command_line_carries_the_diag_flags():
    from tpudoctor.diag.product import DiagRunOptions
    from tpudoctor.settings import Settings

    args = build_parser().parse_args(["diag", "-r", "2", "--tpu", "pod", "--zone", ZONE, "--all-workers",
                                      "--inject", "slow:1:0.1", "--reps", "9", "--disable-plugin", "acme"])
    settings = Settings.resolve(args, args.settings_spec, environ={}, config={})
    argv = DiagRunOptions.from_args(args, settings).worker_argv("3")
    parsed = build_parser().parse_args(argv[1:])
    assert (parsed.level, parsed.inject, parsed.reps, parsed.disable_plugins) == (2, ["slow:1:0.1"], 9, ["acme"])
    assert "--worker=3" in argv and not parsed.all_workers
