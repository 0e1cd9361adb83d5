"""Hostile and odd inputs, each as a user (or a planted file) would give it, through the real CLI: a clear
refusal (exit 2) before anything runs, or an honest result; never a traceback, never a forged line."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import TESTS
from pod_slice import build_slice

from tpudoctor.cli import main

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ZONE = "us-central2-b"


def _use(monkeypatch, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)


# ---------------------------------------------------------------- 1. names that reach a command line

@pytest.mark.parametrize("origin", ["--tpu", "TPU_NAME", "the config file"])
def test_a_tpu_name_that_is_a_gcloud_flag_never_reaches_gcloud(origin, gcp_env, monkeypatch, capsys, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 2))
    marker = tmp_path / "pwned"
    name = f"--ssh-flag=-oProxyCommand=touch {marker}"
    argv = ["check", "--zone", ZONE, "--workers", "0-1", "--step", "1"]
    if origin == "--tpu":
        argv.append(f"--tpu={name}")
    elif origin == "TPU_NAME":
        monkeypatch.setenv("TPU_NAME", name)
    else:
        (tmp_path / "tpudoctor.toml").write_text(f"tpu = {json.dumps(name)}\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is not a valid Google Cloud TPU name" in err and f"(from {origin})" in err
    assert not (tmp_path / "slice" / "gcloud-calls.jsonl").exists()  # no gcloud process started
    assert not marker.exists()


@pytest.mark.parametrize("flag, value, words", [
    ("--zone", "us-central2-b --ssh-flag=-oProxyCommand=id", "zone"),
    ("--zone", "US-CENTRAL2-B", "zone"),
    ("--project", "-oProxyCommand=id", "project id"),
    ("--project", "p/../../v1/projects/other", "project id"),
    ("--tpu", "my_tpu", "TPU name"),
    ("--tpu", "a" * 64, "TPU name"),
    ("--tpu", "pod-", "TPU name"),
    ("--worker", "0;id", "worker"),
])
def test_every_name_gcp_would_refuse_is_refused_before_anything_runs(flag, value, words, gcp_env, monkeypatch,
                                                                      capsys, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 1))
    argv = {"--tpu": "pod", "--zone": ZONE, "--project": "p"} | {flag: value}
    args = [x for k, v in argv.items() for x in (f"{k}={v}",)]
    assert main(["check", *args, "--workers", "0"] if flag != "--worker" else ["check", *args]) == 2
    err = capsys.readouterr().err
    assert f"is not a valid Google Cloud {words}" in err and "Traceback" not in err
    assert "\x1b" not in err
    assert not (tmp_path / "slice" / "gcloud-calls.jsonl").exists()


def test_valid_names_pass_including_a_domain_scoped_project():
    from tpudoctor.resource_names import check_resource_name

    for key, value in (("tpu", "my-tpu-v4-128"), ("zone", "us-central2-b"), ("project", "example.com:my-project"),
                       ("project", "p"), ("worker", "15"), ("tpu", "a" * 63)):
        assert check_resource_name(key, value, origin="--x") == value


def test_the_ssh_command_itself_refuses_a_bad_name():
    """Defence in depth: whatever the caller, the fan-out's argv is never built from a bad name."""
    from tpudoctor.errors import UsageError
    from tpudoctor.pod.fanout import SshTarget

    with pytest.raises(UsageError, match="TPU name"):
        SshTarget(tpu="--ssh-flag=-oProxyCommand=id", zone=ZONE)
    with pytest.raises(UsageError, match="zone"):
        SshTarget(tpu="pod", zone="-ozone")


def test_profile_capture_refuses_a_bad_tpu_name_from_the_environment(gcp_env, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("TPU_NAME", "--ssh-flag=x")
    assert main(["profile", "capture", "--project", "p", "--zone", ZONE, "--logdir", str(tmp_path / "l")]) == 2
    assert "(from TPU_NAME) is not a valid Google Cloud TPU name" in capsys.readouterr().err


def test_merge_refuses_a_bad_tpu_name_for_its_fix_commands(tmp_path, capsys):
    from sample_reports import preempted_node_report

    (tmp_path / "0.json").write_text(json.dumps(preempted_node_report().to_dict()))
    assert main(["merge", str(tmp_path / "0.json"), "--tpu=--ssh-flag=x"]) == 2
    assert "is not a valid Google Cloud TPU name" in capsys.readouterr().err


def test_a_name_inside_worker_reports_never_reaches_a_fix_command(tmp_path, capsys):
    """The merged fix commands (gcloud ... ssh NAME --worker=...) take the node's name from the reports."""
    from sample_reports import preempted_node_report

    for worker, jax in (("0", "0.4.35"), ("1", "0.4.30")):
        doc = preempted_node_report().to_dict()
        doc["target"].update(tpu="--ssh-flag=-oProxyCommand=id", worker=worker)
        doc["environment"] = {"worker": worker, "packages": {"jax": jax}}
        (tmp_path / f"{worker}.json").write_text(json.dumps(doc))
    assert main(["merge", str(tmp_path), "--format", "json", "-o", str(tmp_path / "m.json")]) == 1
    merged = json.loads((tmp_path / "m.json").read_text())
    versions = next(r for r in merged["results"] if r["id"] == "POD-004")
    assert versions["remediation"]["commands"] and not any(
        "ProxyCommand" in c for c in versions["remediation"]["commands"])
    assert merged["target"]["tpu"] is None


# ---------------------------------------------------------------- 4. fan-out paths are the workers' paths

def test_fanout_log_file_is_a_path_on_the_workers_not_here(gcp_env, monkeypatch, tmp_path):
    _use(monkeypatch, build_slice(tmp_path / "slice", 2))
    oom = ("E1130 10:00:00.500000 42 tpu_runtime.cc:9] RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran "
           "out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.")
    (tmp_path / "slice" / "worker-0" / "train.log").write_text("I1130 10:00:00.000000 42 train.py:1] step 1\n")
    (tmp_path / "slice" / "worker-1" / "train.log").write_text(oom + "\n")
    assert not (tmp_path / "train.log").exists()  # nothing by that name where the fan-out runs
    out = tmp_path / "m.json"
    assert main(["check", "--tpu", "pod", "--zone", ZONE, "--workers", "0-1", "--step", "4",
                 "--log-file", "train.log", "--format", "json", "-o", str(out)]) == 1
    results = [r for r in json.loads(out.read_text())["results"] if r["id"] == "LOGS-001"]
    assert [(r["status"], r["scope"]["workers"]) for r in results] == [("FAIL", ["1"])]


# ---------------------------------------------------------------- 6, 11. reports that are not what they claim

def _report_doc(worker: str = "0") -> dict:
    from sample_reports import preempted_node_report

    doc = preempted_node_report().to_dict()
    doc["target"]["worker"] = worker
    doc["environment"] = {"worker": worker}
    return doc


@pytest.mark.parametrize("where", ["report", "result"])
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e308"])
def test_a_non_finite_or_absurd_number_is_a_clear_input_error(where, number, tmp_path, capsys):
    text = json.dumps(_report_doc())
    text = (text.replace('"duration_s": 1.5', f'"duration_s": {number}') if where == "report" else
            text.replace('"duration_s": 0.012', f'"duration_s": {number}'))
    assert number in text
    (tmp_path / "0.json").write_text(text)
    assert main(["merge", str(tmp_path / "0.json")]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "duration_s" in err, err
    assert "finite" in err or "too large" in err or "maximum" in err
    # Beside a good report it is a finding about that worker; the good one still merges.
    (tmp_path / "1.json").write_text(json.dumps(_report_doc("1")))
    assert main(["merge", str(tmp_path), "--format", "json", "-o", str(tmp_path / "m.json")]) == 1
    results = {r["id"]: r for r in json.loads((tmp_path / "m.json").read_text())["results"]}
    assert results["POD-007"]["status"] == "ERROR" and "duration_s" in results["POD-007"]["message"]


def test_a_non_finite_number_in_a_profile_report_is_an_input_error(tmp_path, capsys, real_report):
    doc = json.loads(json.dumps(real_report))
    doc["kpis"]["step_time_mean_ms"] = float("nan")
    (tmp_path / "a.json").write_text(json.dumps(real_report))
    (tmp_path / "b.json").write_text(json.dumps(doc))  # json writes NaN as NaN
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert "not a finite number" in err and "step_time_mean_ms" in err


def test_duplicate_result_ids_are_refused(tmp_path, capsys):
    doc = _report_doc()
    logs = next(r for r in doc["results"] if r["id"] == "LOGS-001")
    doc["results"] += [dict(logs) for _ in range(2000)]
    (tmp_path / "0.json").write_text(json.dumps(doc))
    assert main(["merge", str(tmp_path / "0.json")]) == 2
    err = capsys.readouterr().err
    assert "LOGS-001" in err and "2001 times" in err and "internal error" not in err
    from tpudoctor.errors import InputError
    from tpudoctor.report_file import load_check_report

    with pytest.raises(InputError, match="2001 times"):
        load_check_report(tmp_path / "0.json")


@pytest.mark.parametrize("started_at, words", [
    ("9999-12-31T23:59:59+00:00", "started_at"),  # the run would end past the calendar
    ("2026-11-30T10:00:00", "started_at"),  # no offset: cannot be ordered against the other workers
    ("yesterday", "started_at"),
])
def test_a_report_time_that_cannot_be_placed_is_refused(started_at, words, tmp_path, capsys):
    doc = _report_doc("1")
    doc["started_at"] = started_at
    (tmp_path / "1.json").write_text(json.dumps(doc))
    (tmp_path / "0.json").write_text(json.dumps(_report_doc("0")))
    assert main(["merge", str(tmp_path), "--format", "json", "-o", str(tmp_path / "m.json")]) == 1
    assert "internal error" not in capsys.readouterr().err
    results = {r["id"]: r for r in json.loads((tmp_path / "m.json").read_text())["results"]}
    assert results["POD-007"]["scope"]["workers"] == ["1"] and words in results["POD-007"]["message"]


# ---------------------------------------------------------------- 5, 7. what the outside puts in a report

FORGED = "1\x1b]0;pwned\x07\x1b[2J\x1b[H\n[✓] ALL GOOD: every check passed"
SCRIPT = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def _markdown_as_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(text)


def _hostile_run(tmp_path: Path) -> Path:
    """Two worker reports as a worker could write them: a worker id with an OSC title, a screen clear and a
    forged line; another whose id and message are HTML."""
    run = tmp_path / "run"
    run.mkdir()
    for worker, message in (("0", f"log line: {SCRIPT}\n## Root cause: none"), (FORGED, "plain")):
        doc = _report_doc(worker)
        doc["results"][0]["message"] = message
        doc["host"] = SCRIPT
        (run / f"{len(list(run.iterdir()))}.json").write_text(json.dumps(doc))
    return run


def test_junit_holds_control_characters_from_reports(tmp_path, capsys):
    run = _hostile_run(tmp_path)
    assert main(["merge", str(run), "--format", "junit", "-o", str(tmp_path / "m.xml")]) == 1
    assert "internal error" not in capsys.readouterr().err
    suites = ET.parse(tmp_path / "m.xml").getroot()
    assert any("␛]0;pwned␇" in (s.get("name") or "") for s in suites.iter("testsuite"))


def test_compare_junit_parses_with_control_characters_in_a_saved_report(real_report, tmp_path, capsys):
    doc = json.loads(json.dumps(real_report))
    doc["source"] = "run-\x1b[31m\x00\x07-7"
    (tmp_path / "a.json").write_text(json.dumps(real_report))
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "junit",
                 "-o", str(tmp_path / "c.xml")]) == 0
    assert any("run-␛[31m␀␇-7" in (e.text or "") + e.get("value", "")
               for e in ET.parse(tmp_path / "c.xml").getroot().iter())


def test_text_never_prints_escape_sequences_or_a_forged_line(tmp_path, capsys):
    run = _hostile_run(tmp_path)
    assert main(["merge", str(run)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert not any(line.startswith("[✓] ALL GOOD") for line in out.splitlines())
    assert "1␛]0;pwned␇␛[2J␛[H [✓] ALL GOOD" in out  # shown, not run


def test_markdown_passes_no_html_or_heading_from_reports(tmp_path, capsys):
    run = _hostile_run(tmp_path)
    assert main(["merge", str(run), "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    rendered = _markdown_as_html(out)
    assert "<script>" not in rendered and "<img" not in rendered and "&lt;script&gt;" in out
    assert "\n## Root cause: none" not in out
    assert not any(line.startswith("[✓] ALL GOOD") for line in out.splitlines())


def test_host_names_from_capture_file_names_are_escaped_in_every_profile_format(tmp_path, capsys):
    """A capture folder's file names are its host names: a file can be called anything but '/'."""
    import shutil

    source = TESTS / "fixtures" / "profiles" / "multihost_slow_host"
    capture = tmp_path / "capture"
    shutil.copytree(source, capture)
    run = next(capture.glob("plugins/profile/*"))
    for i, host in enumerate(sorted(run.glob("*.xplane.pb"))):
        host.rename(run / f"w{i}{SCRIPT.replace('/', '')}\x1b]0;x\x07.xplane.pb")
    for fmt in ("text", "markdown", "html"):
        assert main(["profile", "analyze", str(capture), "--format", fmt, "-o", str(tmp_path / f"p.{fmt}")]) == 1  # its FAIL findings
        out = (tmp_path / f"p.{fmt}").read_text()
        assert "\x1b" not in out and "\x07" not in out
        assert "w1" in out and "␛" in out and "␇" in out  # the host is named, its escape sequence shown
        if fmt != "text":
            shown = out if fmt == "html" else _markdown_as_html(out)
            assert "<img" not in shown and "<script>alert" not in shown, fmt


# ---------------------------------------------------------------- 9. one summary, the same in every format

def test_one_summary_sentence_in_every_format(tmp_path):
    from tpudoctor.findings import Report, Status, root_cause
    from tpudoctor.rendering import render
    from tpudoctor.reports.views.check import summary_sentence

    only_warning = Report.from_dict(_report_doc())
    only_warning.results = [r for r in only_warning.results if r.status in (Status.WARN, Status.PASS)]
    sentence = summary_sentence(only_warning.results, root_cause(only_warning.results))
    assert sentence.startswith("tpudoctor found 1 issue(s) (1 ok, 1 warning)")
    for fmt in ("text", "markdown", "html", "junit"):
        out = render(only_warning.to_dict(), fmt)
        assert sentence in out.replace("\\", ""), fmt
        assert "No issues found" not in out, fmt


def test_the_root_cause_headline_says_the_check_failed(tmp_path):
    """LOGS-001's title says what passing means ('Job log shows no known TPU failure'): the headline must
    not read as a pass."""
    from tpudoctor.rendering import render

    doc = _report_doc()
    doc["results"] = [dict(r, status="PASS", skip_reason=None) for r in doc["results"] if r["id"] != "LOGS-001"]
    doc["results"].append({"id": "LOGS-001", "kind": "check", "step": 4, "title": "Job log shows no known TPU failure",
                           "status": "FAIL", "severity": "high", "message": "HBM out of memory (train.log:6)",
                           "evidence": {}, "remediation": None, "scope": {"workers": [], "hosts": [], "chips": []},
                           "skip_reason": None, "duration_s": 0.01})
    headline = "Root cause (step 4, Logs): LOGS-001 Job log shows no known TPU failure: failed"
    assert f"<h2>{headline}</h2>" in render(doc, "html")
    assert "<p>tpudoctor found 1 issue(s)" in render(doc, "html")
    assert f"<h2>{headline}</h2>" in _markdown_as_html(render(doc, "markdown"))
    assert f"\n{headline}\n" in render(doc, "text")


def test_error_messages_show_escape_sequences_from_file_names_never_run_them(tmp_path, capsys):
    bad = tmp_path / "r\x1b]0;pwned\x07\x1b[2J.json"
    bad.write_text("{")
    assert main(["merge", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "r␛]0;pwned␇␛[2J.json" in err


# ---------------------------------------------------------------- the smaller ones

def test_check_output_to_a_folder_is_refused_before_the_run(gcp_env, tmp_path, capsys, monkeypatch):
    from tpudoctor.runner import Runner

    def never(*_a, **_k):
        raise AssertionError("the checks ran before -o was found unusable")

    monkeypatch.setattr(Runner, "run", never)
    (tmp_path / "reports").mkdir()
    assert main(["check", "NODE-005", "-o", str(tmp_path / "reports")]) == 2
    assert "is a folder" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["check", "NODE-005", "-o", str(tmp_path / "file" / "r.json")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_matrix_shows_a_silent_worker_as_unknown_not_failed(tmp_path, capsys):
    (tmp_path / "0.json").write_text(json.dumps(_report_doc("0")))
    (tmp_path / "1.json").write_text("{")  # cut off mid-upload
    assert main(["merge", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    part = out.split("\nWorkers\n", 1)[1].split("\n\n", 1)[0]
    matrix = [line.strip() for line in part.splitlines()]
    assert matrix[1].startswith("worker") and all(line.endswith("?") for line in matrix[2:-1]), matrix
    assert "? could not run or no report" in matrix[-1]


def test_workers_are_in_natural_order(tmp_path, capsys):
    from tpudoctor.findings import Scope
    from tpudoctor.pod.worker_ids import natural_key

    names = ["worker-10", "worker-2", "worker-1", "10", "2"]
    assert sorted(names, key=natural_key) == ["2", "10", "worker-1", "worker-2", "worker-10"]
    assert Scope.of(workers=names).workers == ("2", "10", "worker-1", "worker-2", "worker-10")
    for worker in ("worker-10", "worker-2"):
        (tmp_path / f"{worker}.json").write_text(json.dumps(_report_doc(worker)))
    assert main(["merge", str(tmp_path)]) == 1
    assert "columns: 0=worker-2, 1=worker-10" in capsys.readouterr().out


def test_help_texts_say_what_the_commands_do(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "$TPUDOCTOR_FORMAT" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["profile", "analyze", "--help"])
    assert "communication-bound" in capsys.readouterr().out


def test_compare_errors_read_like_every_other_error(real_report, tmp_path, capsys):
    other = json.loads(json.dumps(real_report))
    other["device"] = "tpu"
    other["summary"]["device_kinds"] = ["TPU v6 Lite"]
    (tmp_path / "a.json").write_text(json.dumps(real_report))
    (tmp_path / "b.json").write_text(json.dumps(other))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on-regression", "5%"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("tpudoctor: error: not comparable: ") and "tpudoctor compare:" not in captured.err
    assert "NOT COMPARABLE" in captured.out  # the comparison is still written


@pytest.mark.parametrize("argv", [
    ["hang", "--tpu", "--ssh-flag=-oProxyCommand=touch pwned", "--zone", "us-central2-b", "--all-workers"],
    ["hang", "--tpu", "my-tpu", "--zone", "us-central2-b;reboot", "--all-workers"],
    ["goodput", "--tpu", 'my-tpu" OR severity>=DEFAULT OR "', "--project", "my-project"],
    ["goodput", "--project", "my-project", "--gke-cluster", "c1", "--gke-workload", 'w" OR "x'],
    ["goodput", "--project", "my-project", "--tpu", "my-tpu", "--worker", "0 OR 1"],
])
def test_hang_and_goodput_refuse_a_name_that_would_reach_gcloud_or_a_logging_filter(argv, gcp_env, monkeypatch,
                                                                                    capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    _use(monkeypatch, build_slice(tmp_path / "slice", 2))
    argv = [a.replace("--tpu", "--tpu=") + argv[i + 1] if a == "--tpu" else a for i, a in enumerate(argv)
            if i == 0 or argv[i - 1] != "--tpu"]  # --tpu=NAME: a name that starts with -- stays its value
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is not a valid" in err and "Traceback" not in err
    assert not (tmp_path / "pwned").exists()
