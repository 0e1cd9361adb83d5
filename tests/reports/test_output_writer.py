"""Every command's ``-o`` goes through one writer (``tpudoctor.output``) and every command's JUnit follows the
one rule that sets its exit status (``tpudoctor.findings.Gate``).

The inputs are the hostile probe's (2026-12-04, N4, N17, N18): the bundled MaxText restart log, real
out-of-memory listings (tests/data/memory), a py-spy dump, per-worker check reports made by ``check``, goodput
reports made by ``goodput``, and a JAX device memory profile written through tpudoctor's own pprof schema.
"""

from __future__ import annotations

import gzip
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import TESTS as HERE

from tpudoctor import cli
from tpudoctor.findings import Status

RESTART_LOG = HERE / "fixtures" / "goodput" / "maxtext_restart.log"
OOM_LOG = HERE / "data" / "memory" / "easydel_166_compile_hbm_report.log"
PY_SPY_DUMP = """\
Process 1000: python train.py
Python v3.10.12 (/usr/bin/python3.10)

Thread 1000 (idle): "MainThread"
    wait (threading.py:320)
    all_reduce (torch/distributed/distributed_c10d.py:2117)
    train_step (/app/train.py:40)
    <module> (/app/train.py:90)
"""


def _device_profile(path: Path) -> None:
    """A device memory profile as jax.profiler.save_device_memory_profile writes it (pprof, gzip): eight
    devices, tpu:0 holding 100 GiB and the others 1 GiB, so one chip stands out (a WARN)."""
    from tpudoctor.captures import pprof_schema

    profile = pprof_schema.profile_class()()
    names = ["", "allocations", "count", "space", "bytes", "device", "kind", "buffer", "train_step"]
    profile.string_table.extend(names + [f"tpu:{d}" for d in range(8)])
    profile.sample_type.add(type=1, unit=2)
    profile.sample_type.add(type=3, unit=4)
    profile.function.add(id=1, name=8, system_name=8, filename=8)
    profile.location.add(id=1).line.add(function_id=1, line=1)
    for device in range(8):
        sample = profile.sample.add(location_id=[1], value=[1, (100 if device == 0 else 1) * 2**30])
        sample.label.add(key=5, str=len(names) + device)
        sample.label.add(key=6, str=7)
    path.write_bytes(gzip.compress(profile.SerializeToString()))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """The probe folder: logs, a dump, two workers' check reports, two goodput reports, a device profile."""
    folder = tmp_path_factory.mktemp("probe")
    shutil.copy(RESTART_LOG, folder / "restart.log")
    shutil.copy(OOM_LOG, folder / "oom.log")
    (folder / "w0.txt").write_text(PY_SPY_DUMP)
    (folder / "dumps").mkdir()
    (folder / "dumps" / "w0.txt").write_text(PY_SPY_DUMP)
    _device_profile(folder / "outlier.prof")
    (folder / "reports").mkdir()
    for worker, log in (("0", folder / "restart.log"), ("1", folder / "oom.log")):
        out = folder / "reports" / f"w{worker}.json"
        assert cli.main(["check", "--step", "4", "--log-file", str(log), "--worker", worker, "--format", "json",
                         "-o", str(out)]) in (0, 1)
    # the first attempt alone has the higher ETTR: against it, the whole log is a regression
    (folder / "first.log").write_text("".join(RESTART_LOG.read_text().splitlines(keepends=True)[:30]))
    assert cli.main(["goodput", str(folder / "first.log"), "--format", "json", "-o", str(folder / "g_base.json")]) == 0
    assert cli.main(["goodput", str(folder / "restart.log"), "--format", "json", "-o", str(folder / "g_cand.json")]) == 0
    return folder


COMMANDS = {  # name -> arguments, with {d} the probe folder; every command that writes a report with -o
    "memory": "memory {d}/oom.log",
    "goodput": "goodput {d}/restart.log",
    "hang": "hang --stacks {d}/w0.txt",
    "compare": "compare {d}/g_base.json {d}/g_cand.json",
    "merge": "merge {d}/reports/w0.json {d}/reports/w1.json",
    "check": "check --step 4 --log-file {d}/oom.log",
    "diag": "diag -r 1",  # the devices this process has: an in-process test may find JAX loaded already
}
SLOW = {"diag"}
LEVELS = {"fail": {Status.FAIL, Status.ERROR}, "warn": {Status.FAIL, Status.ERROR, Status.WARN}}  # --fail-on  # starts JAX


def _params(names):
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def _argv(template: str, folder: Path) -> list[str]:
    return template.format(d=folder).split()


@pytest.mark.parametrize("command", _params(COMMANDS))
def test_o_gs_uploads_the_report_through_the_storage_emulator(command, inputs, gcs_emulator, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    gcs_emulator.create_bucket("bkt")
    code = cli.main([*_argv(COMMANDS[command], inputs), "--format", "json", "-o", f"gs://bkt/{command}/x.json"])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    blob = gcs_emulator.bucket("bkt").blob(f"{command}/x.json")
    blob.reload()
    assert blob.content_type == "application/json"
    assert isinstance(json.loads(blob.download_as_bytes()), dict)
    assert not (tmp_path / "gs:").exists()  # not a local folder named after the URI


@pytest.mark.parametrize("command", _params(COMMANDS))
def test_o_gs_without_credentials_is_exit_2_before_the_work(command, inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # conftest: no credentials file, no gcloud config, not on Google Cloud
    code = cli.main([*_argv(COMMANDS[command], inputs), "-o", "gs://bkt/x.txt"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write gs://bkt/x.txt" in err and "credentials" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "gs:").exists()


@pytest.mark.parametrize("uri, says", [("gs://Bad_Bucket!/x.txt", "not a valid bucket name"),
                                       ("gs://bkt/", "give an object name"), ("gs://", "names no bucket")])
def test_an_invalid_gs_destination_is_exit_2(uri, says, inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["goodput", str(inputs / "restart.log"), "-o", uri])
    err = capsys.readouterr().err
    assert code == 2 and says in err, err


SELF_OUTPUT = {  # name -> (arguments, the input that -o names)
    "goodput": ("goodput {d}/restart.log", "restart.log"),
    "memory": ("memory {d}/oom.log", "oom.log"),
    "compare": ("compare {d}/g_base.json {d}/g_cand.json --format json", "g_base.json"),
    "merge": ("merge {d}/reports/w0.json {d}/reports/w1.json", "reports/w0.json"),
    "merge-folder": ("merge {d}/reports", "reports/w1.json"),
    "hang": ("hang --stacks {d}/w0.txt", "w0.txt"),
    "hang-folder": ("hang --stacks {d}/dumps", "dumps/w0.txt"),
    "check": ("check --step 4 --log-file {d}/oom.log", "oom.log"),
    "profile": ("profile analyze {d}/oom.log", "oom.log"),
}


@pytest.mark.parametrize("case", SELF_OUTPUT)
def test_o_naming_an_input_is_refused_before_any_work(case, inputs, tmp_path, capsys):
    template, target = SELF_OUTPUT[case]
    path = inputs / target
    before = path.read_bytes()
    code = cli.main([*_argv(template, inputs), "-o", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "names an input of this run" in err, err
    assert path.read_bytes() == before
    # another spelling of the same file (a link) is the same file
    link = tmp_path / "link"
    link.symlink_to(path)
    code = cli.main([*_argv(template, inputs), "-o", f"{tmp_path}/../{tmp_path.name}/link"])
    assert code == 2 and path.read_bytes() == before


JUNIT_RUNS = {  # name -> arguments; the JSON of the same run says which findings fail it
    "memory --fail-on warn": "memory {d}/outlier.prof --fail-on warn",
    "memory": "memory {d}/outlier.prof",
    "memory oom": "memory {d}/oom.log",
    "memory oom --exit-zero": "memory {d}/oom.log --exit-zero",
    "hang --fail-on warn": "hang --stacks {d}/w0.txt --fail-on warn",
    "hang": "hang --stacks {d}/w0.txt",
    "goodput": "goodput {d}/restart.log",
    "goodput --fail-on fail": "goodput {d}/restart.log --fail-on fail",
    "goodput --fail-on warn": "goodput {d}/restart.log --fail-on warn",
    "goodput --min-ettr": "goodput {d}/restart.log --min-ettr 0.9",
    "goodput --exit-zero": "goodput {d}/restart.log --min-ettr 0.9 --fail-on warn --exit-zero",
    "compare regression": "compare {d}/g_base.json {d}/g_cand.json --fail-on-regression 1",
    "compare --exit-zero": "compare {d}/g_base.json {d}/g_cand.json --fail-on-regression 1 --exit-zero",
    "merge": "merge {d}/reports/w0.json {d}/reports/w1.json",
    "merge --fail-on warn": "merge {d}/reports/w0.json {d}/reports/w1.json --fail-on warn",
    "merge --exit-zero": "merge {d}/reports/w0.json {d}/reports/w1.json --exit-zero",
    "check --fail-on warn": "check --step 4 --log-file {d}/restart.log --fail-on warn",
    "diag --fail-on warn": "diag -r 1 --fail-on warn",
}


def _failing_in_json(document: dict, argv: list[str]) -> int:
    """How many findings of the run's JSON report are at or above its --fail-on (the default per command)."""
    if "--exit-zero" in argv:
        return 0
    if document.get("kind", "").endswith("compare"):
        return int(bool(document["regressed"]))
    default = None if argv[0] == "goodput" else "fail"
    fail_on = argv[argv.index("--fail-on") + 1] if "--fail-on" in argv else default
    findings = document.get("results") if argv[0] in ("check", "merge") else document["findings"]
    count = 0 if fail_on is None else sum(Status(f["status"]) in LEVELS[fail_on] for f in findings)
    gate = document.get("gate") if argv[0] == "goodput" else None
    return count + int(bool(gate) and gate["verdict"] == "failed")


@pytest.mark.parametrize("run", [pytest.param(r, marks=pytest.mark.slow) if r.startswith("diag") else r
                                 for r in JUNIT_RUNS])
def test_junit_failures_are_the_findings_that_set_exit_1(run, inputs, tmp_path, capsys):
    argv = _argv(JUNIT_RUNS[run], inputs)
    code = cli.main([*argv, "--format", "junit", "-o", str(tmp_path / "out.xml")])
    json_code = cli.main([*argv, "--format", "json", "-o", str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert code == json_code and code in (0, 1), err
    suites = ET.parse(tmp_path / "out.xml").getroot().findall("testsuite")
    failed = sum(int(s.get("failures")) + int(s.get("errors")) for s in suites)
    cases = sum(len(s.findall("testcase/failure")) + len(s.findall("testcase/error")) for s in suites)
    expected = _failing_in_json(json.loads((tmp_path / "out.json").read_text()), argv)
    assert failed == cases == (expected if code == 1 else 0), (failed, cases, expected, code)
    assert (code == 1) == (expected > 0)
