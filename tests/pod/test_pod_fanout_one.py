"""One pod fan-out (``tpudoctor.pod.FanOut``): ``check --all-workers`` and ``hang --all-workers`` both run through
it, their workers' command lines come from the settings (``Settings.worker_argv``), and a worker that gives no
document is a finding scoped to it, never a traceback. The workers are the fake slice of tests/pod_slice.py
behind the gcloud stand-in (tests/pod_slice_bin/gcloud): each one runs the real tpudoctor."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from paths import TESTS
from pod_slice import STAND_IN_BIN, build_slice

from tpudoctor import triage
from tpudoctor.cli import build_parser, main
from tpudoctor.findings import Report
from tpudoctor.hang import product as hang_product
from tpudoctor.hang.capture import CAPTURE_FILE
from tpudoctor.hang.pod import check_document
from tpudoctor.hang.report import DOCUMENT_KIND
from tpudoctor.pod import FanOut, WorkerCommand
from tpudoctor.pod.documents import report_from_document
from tpudoctor.pod.fanout import SshTarget
from tpudoctor.settings import Settings, passed_flags

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ZONE = "us-central2-b"
GCLOUD = str(STAND_IN_BIN / "gcloud")
CAPTURES = TESTS / "data" / "hang"


def _use(monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def _settings(argv: list[str], environ: dict[str, str] | None = None):
    args = build_parser().parse_args(argv)
    return args, Settings.resolve(args, args.settings_spec, environ=environ or {}, config={})


def _give_dumps(root: Path, workers: int) -> None:
    """Each worker's ``dumps`` folder: one process of a real hung JAX job's capture (``--replay dumps``)."""
    source = CAPTURES / "data_loader"
    pids = sorted(p.name for p in source.glob("pid-*.json") if p.stem.removeprefix("pid-").isdigit())
    for i in range(workers):
        dumps = root / f"worker-{i}" / "dumps"
        dumps.mkdir(parents=True)
        shutil.copy(source / CAPTURE_FILE, dumps / CAPTURE_FILE)
        shutil.copy(source / pids[i % len(pids)], dumps / pids[i % len(pids)])


def _worker_commands(root: Path) -> dict[str, list[str]]:
    """The command line each worker was given, by worker, as the gcloud stand-in logged it."""
    found = {}
    for line in (root / "gcloud-calls.jsonl").read_text().splitlines():
        argv = json.loads(line)["argv"]
        worker = next(a for a in argv if a.startswith("--worker=")).split("=", 1)[1]
        found[worker] = shlex.split(argv[argv.index("--command") + 1])
    return found


# --- both commands go through the one fan-out, their settings reach the workers ------------------------------

@pytest.fixture
def spied(monkeypatch):
    """Every ``FanOut.collect``: (the subcommand, worker 0's command line, the outcomes)."""
    calls = []
    collect = FanOut.collect

    def spy(self, command):
        outcomes = collect(self, command)
        calls.append((command.subcommand, list(command.argv(self.workers[0])), outcomes))
        return outcomes

    monkeypatch.setattr(FanOut, "collect", spy)
    return calls


def test_check_all_workers_runs_through_fanout_and_the_settings_reach_every_worker(gcp_env, monkeypatch, tmp_path,
                                                                                   spied):
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 2))
    monkeypatch.setenv("TPUDOCTOR_DISABLE_PLUGINS", "from-env")  # a setting from our environment, not a flag
    out = tmp_path / "merged.json"
    main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-1", "NODE-005", "--disable-plugin", "acme",
          "--redact", "--worker-timeout", "120s", "--format", "json", "-o", str(out)])
    doc = json.loads(out.read_text())
    assert [(sub, len(outcomes)) for sub, _argv, outcomes in spied] == [("check", 2)]
    assert doc["slice"]["workers_reported"] == ["0", "1"]
    commands = _worker_commands(root)
    assert sorted(commands) == ["0", "1"]
    for worker, argv in commands.items():
        assert argv[:2] == ["tpudoctor", "check"]
        assert "--disable-plugin=acme" in argv and "--redact" in argv and f"--worker={worker}" in argv
        assert "--format=json" in argv and argv[-1] == "NODE-005"
        parsed = build_parser().parse_args(argv[1:])
        assert parsed.redact and parsed.exit_zero and parsed.disable_plugins == ["acme"]


def test_hang_all_workers_runs_through_fanout_and_the_settings_reach_every_worker(monkeypatch, tmp_path, spied):
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 2))
    _give_dumps(root, 2)
    monkeypatch.setenv("TPUDOCTOR_DISABLE_PLUGINS", "from-env")
    out = tmp_path / "merged.json"
    main(["hang", "--tpu", "pod", "--zone", ZONE, "--workers", "0-1", "--replay", "dumps", "--interval", "0s",
          "--tz", "+05:30", "--worker-timeout", "120s", "--format", "json", "-o", str(out)])
    report = json.loads(out.read_text())
    assert [(sub, len(outcomes)) for sub, _argv, outcomes in spied] == [("hang", 2)]
    assert sorted(report["workers"]) == ["0", "1"]
    assert {w["status"] for w in report["workers"].values()} == {"reported"}
    for worker, argv in _worker_commands(root).items():
        assert argv[:2] == ["tpudoctor", "hang"]
        # the plugins left out come from our environment (the worker has not got it), the rest from our flags
        assert "--disable-plugin=from-env" in argv and "--tz=+05:30" in argv and f"--worker={worker}" in argv
        assert "--replay=dumps" in argv and "--interval=0s" in argv and "--format=json" in argv
        parsed = build_parser().parse_args(argv[1:])
        assert parsed.disable_plugins == ["from-env"] and parsed.tz == "+05:30"


# --- a FanOut against the fake slice: one outcome per worker, for check and for hang ---------------------------

def test_a_fanout_gives_each_workers_check_report_and_a_finding_for_the_unreachable_one(gcp_env, monkeypatch,
                                                                                         tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 3, unreachable={2}))
    args, settings = _settings(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-2", "NODE-005",
                                "--disable-plugin", "acme"])
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0", "1", "2"], timeout_s=120, name="pod")
    check = WorkerCommand("check", lambda w: triage.worker_argv(args, settings, worker=w,
                                                                   timeout_s=fan.worker_limit_s),
                          kind="check", what="check report", read=report_from_document)
    outcomes = fan.collect(check)
    assert [o.worker for o in outcomes] == ["0", "1", "2"]
    for outcome in outcomes[:2]:
        assert isinstance(outcome.report, Report) and outcome.problem is None
        assert outcome.document["kind"] == "check" and outcome.report.target.worker == outcome.worker
        assert outcome.source == f"gcloud ssh worker {outcome.worker}"
    unreachable = outcomes[2]
    assert unreachable.report is None and unreachable.document is None
    problem = unreachable.problem
    assert (problem.id, problem.status.value, list(problem.scope.workers)) == ("POD-001", "FAIL", ["2"])
    assert problem.message.startswith("gcloud ssh to worker 2 failed: ") and problem.evidence["exit_code"] == 255
    assert "--tunnel-through-iap" in problem.remediation.commands[0]
    assert fan.via == "gcloud compute tpus tpu-vm ssh pod --worker=N"


def test_a_fanout_gives_each_workers_hang_document_and_a_finding_for_the_unreachable_one(monkeypatch, tmp_path):
    root = tmp_path / "slice"
    _use(monkeypatch, build_slice(root, 3, unreachable={1}))
    _give_dumps(root, 3)
    args, settings = _settings(["hang", "--tpu", "pod", "--zone", ZONE, "--workers", "0-2", "--replay", "dumps",
                                "--interval", "0s"])
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0", "1", "2"], timeout_s=120, name="pod")
    hang = WorkerCommand("hang", lambda w: hang_product.worker_argv(args, settings, worker=w), kind=DOCUMENT_KIND,
                         what="hang report", read=check_document, label=lambda w: f"worker {w}")
    outcomes = fan.collect(hang)
    assert [o.worker for o in outcomes] == ["0", "1", "2"]
    for outcome in (outcomes[0], outcomes[2]):
        assert outcome.problem is None and outcome.document["kind"] == DOCUMENT_KIND
        assert outcome.document["target"]["worker"] == outcome.worker and outcome.document["captures"]
    problem = outcomes[1].problem
    assert outcomes[1].document is None
    assert (problem.id, list(problem.scope.workers)) == ("POD-001", ["1"]) and "failed" in problem.message


# --- what goes wrong on the way is a finding scoped to the worker ---------------------------------------------

def _echo(text: str) -> WorkerCommand:
    """A worker command that prints ``text`` instead of a report (a broken or foreign tpudoctor)."""
    return WorkerCommand("check", lambda _w: ["printf", "%s", text], kind="check", what="check report",
                         read=report_from_document)


def test_output_that_is_no_report_is_an_unreadable_answer(gcp_env, monkeypatch, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 3))
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0", "1", "2"], timeout_s=60, name="pod")
    for text in ("{not json\n", '{"kind": "check", "schema_version": "9.0"}\n',
                 '{"kind": "check", "results": [{"id": 3}]}\n'):
        for outcome in fan.collect(_echo(text)):
            problem = outcome.problem
            assert outcome.report is None and problem is not None, text
            assert (problem.id, problem.status.value, list(problem.scope.workers)) == (
                "POD-001", "ERROR", [outcome.worker])
            assert problem.message.startswith(f"worker {outcome.worker} answered (exit 0) but sent no readable "
                                              "check report: ")
            assert problem.evidence["stdout_head"] == text


def test_a_worker_past_its_timeout_and_a_gcloud_that_cannot_start_are_findings(gcp_env, monkeypatch, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 2, hung={1}))
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0", "1"], timeout_s=3, name="pod")
    answered, hung = fan.collect(_echo("{}\n"))
    assert answered.problem.status.value == "ERROR"  # it answered, with no report
    assert hung.problem.id == "POD-001" and hung.problem.message.startswith("no answer within 3s")
    assert list(hung.problem.scope.workers) == ["1"]

    nowhere = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=str(tmp_path / "no-gcloud")), ["0"], timeout_s=3)
    (outcome,) = nowhere.collect(_echo("{}\n"))
    assert outcome.problem.id == "POD-001" and "cannot start" in outcome.problem.message


def test_a_worker_without_tpudoctor_is_a_finding_of_its_own(gcp_env, monkeypatch, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 1, no_tpudoctor={0}))
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0"], timeout_s=30, name="pod")
    command = WorkerCommand("hang", lambda _w: ["tpudoctor", "hang", "--format=json"], kind=DOCUMENT_KIND,
                            what="hang report")
    (outcome,) = fan.collect(command)
    assert outcome.problem.id == "POD-002" and outcome.problem.evidence["exit_code"] == 127
    assert "then run tpudoctor hang again" in outcome.problem.remediation.text


def test_fanout_hands_the_outcomes_to_the_merge_and_takes_no_unbounded_run(gcp_env, monkeypatch, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 2))
    fan = FanOut(SshTarget(tpu="pod", zone=ZONE, gcloud=GCLOUD), ["0", "1"], timeout_s=30, name="pod")
    merged = fan.run(_echo("{}\n"), lambda outcomes: [o.worker for o in outcomes])
    assert merged == ["0", "1"] and fan.started_at is not None
    assert fan.worker_limit_s < fan.timeout_s
    for timeout_s, parallel in ((0, 4), (-1, 4), (10, 0)):
        with pytest.raises(ValueError):
            FanOut(SshTarget(tpu="pod", zone=ZONE), ["0"], timeout_s=timeout_s, parallel=parallel)


# --- the worker's command line: one function from the settings ------------------------------------------------

def test_hang_worker_argv_reads_back_to_the_same_choices_and_passes_no_redact():
    args, settings = _settings(["hang", "--tpu", "pod", "--zone", ZONE, "--project", "p", "--all-workers",
                                "--interval", "7.5s", "--native", "never", "--dump-timeout", "9s",
                                "--log-file=-odd name.log", "--tz", "Europe/Paris", "--since", "10m",
                                "--redact", "--disable-plugin", "acme,-odd"],
                               environ={"TPUDOCTOR_DISABLE_PLUGINS": "ignored: the flag wins"})
    argv = shlex.split(shlex.join(hang_product.worker_argv(args, settings, worker="3")))
    worker = build_parser().parse_args(argv[1:])
    assert (worker.interval, worker.native, worker.dump_timeout, worker.log_file, worker.tz) == (
        "7.5s", "never", "9s", ["-odd name.log"], "Europe/Paris")
    back = Settings.resolve(worker, worker.settings_spec, environ={}, config={})
    assert (back.worker, back.format, back.disable_plugins) == ("3", "json", ("acme", "-odd"))
    # the slice's Cloud Logging digests are read once, by the merge: no target or --since for the worker, and the
    # merge redacts the slice's report with one set of placeholders
    assert (back.project, back.tpu, worker.since, worker.redact, worker.all_workers) == (None, None, None, False,
                                                                                          False)


def test_check_worker_argv_carries_the_settings_and_the_selection():
    args, settings = _settings(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-3", "--step", "2",
                                "--redact", "--probe", "--disable-plugin", "acme", "GCS-001"],
                               environ={"CLOUDSDK_CORE_PROJECT": "env-project"})
    argv = triage.worker_argv(args, settings, worker="2", timeout_s=50.0)
    worker = build_parser().parse_args(argv[1:])
    back = Settings.resolve(worker, worker.settings_spec, environ={}, config={})
    assert (back.project, back.worker, back.timeout_s, back.format, back.disable_plugins) == (
        "env-project", "2", 50.0, "json", ("acme",))
    assert (worker.step, worker.redact, worker.probe, worker.write_probe, worker.exit_zero, worker.ids) == (
        [2], True, True, False, True, ["GCS-001"])
    assert "--reference-model=dense" not in argv  # step 5 was not asked for
    assert not worker.workers and not worker.all_workers  # a worker never fans out again


def test_the_worker_argv_function_refuses_what_it_cannot_pass():
    args, settings = _settings(["hang"])
    with pytest.raises(ValueError, match="not a flag of this command"):
        passed_flags(args, ["--no-such-flag"])
    with pytest.raises(ValueError, match="not settings of this command"):
        settings.worker_argv("hang", keys=("worker", "data"))
    with pytest.raises(ValueError, match="not among the worker's keys"):
        settings.worker_argv("hang", keys=("worker",), format="json")
    assert passed_flags({"a": True, "b": False, "c": None, "d": [1, 2], "e": 0, "f": "-x"},
                        ["-a", "--b", "--c", "--d", "--e", "--f"]) == ["-a", "--d=1", "--d=2", "--e=0", "--f=-x"]


def test_the_pod_package_gives_the_fanout():
    import tpudoctor.pod as pod
    from tpudoctor.pod import fanout

    assert pod.FanOut is fanout.FanOut and pod.WorkerCommand is fanout.WorkerCommand
    with pytest.raises(AttributeError):
        pod.NoSuchThing  # noqa: B018


# --- no second fan-out: only the fan-out reaches workers ------------------------------------------------------

def test_a_second_driver_in_hang_or_a_command_breaks_the_one_fanout_contract(tmp_path):
    from test_import_contracts import IMPORT_LINTER_MISSING, installed_layout, lint_imports

    if IMPORT_LINTER_MISSING:
        pytest.skip("import-linter is not installed")
    root = installed_layout(tmp_path)
    with open(root / "tpudoctor" / "hang" / "pod.py", "a") as hang:
        hang.write("\n\ndef _second():\n    from tpudoctor.pod.reach import run_workers  # noqa: F401\n")
    with open(root / "tpudoctor" / "commands" / "merge_cmd.py", "a") as merge:
        merge.write("\n\ndef _second():\n    from tpudoctor.pod import reach  # noqa: F401\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "the commands go through FanOut BROKEN" in " ".join(output.split()), output
    for line in ("tpudoctor.hang.pod -> tpudoctor.pod.reach", "tpudoctor.commands.merge_cmd -> tpudoctor.pod.reach"):
        assert line in output, output
