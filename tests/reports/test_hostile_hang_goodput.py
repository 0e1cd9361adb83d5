"""Issue 33: four defects found by trying hostile inputs on ``hang`` and ``goodput``, each through the real CLI,
plus the exit a CI gets for a log that cannot be read. Each test was run against the code before its fix and
failed there."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from tpudoctor.cli import main


def _glog(hh: int, mm: int, ss: int, body: str) -> str:
    return f"I0813 {hh:02d}:{mm:02d}:{ss:02d}.000000 140 metric_logger.py:226] {body}"


def test_goodput_reports_a_clock_that_goes_back_and_times_each_segment(tmp_path, capsys):
    """Two runs' lines put together (the later first): ten steps 10:00:00-10:00:18, then runtime lines stamped an
    hour earlier. Before: 'ETTR unknown ... the log's lines carry no timestamps'. Now the jump is named (where,
    by how much) and the wall time is the two segments: 18 s + 4 s."""
    lines = [_glog(10, 0, 2 * i, f"completed step: {i}, seconds: 2.000, loss: 3.1") for i in range(10)]
    lines += [f"I0813 09:00:{i:02d}.000000 140 input_pipeline.cc:77] Input pipeline took 3 ms" for i in range(5)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert main(["goodput", str(log), "--format", "json", "--year", "2024"]) == 0
    doc = json.loads(capsys.readouterr().out)
    g = doc["goodput"]
    assert g["clock_jumps"] == [{"at": f"{log}:11", "jump_s": -3618.0, "from": "2024-08-13T10:00:18Z",
                                 "to": "2024-08-13T09:00:00Z", "step": None}]
    assert g["wall_s"] == 22.0 and g["productive_s"] == 18.0 and g["ettr"] == pytest.approx(18 / 22, abs=1e-4)
    assert "no timestamps" not in json.dumps(g["nulls"])
    finding = next(f for f in doc["findings"] if f["id"] == "goodput-measurable")
    assert finding["status"] == "WARN" and "go back" in finding["message"] and f"{log}:11" in finding["message"]


def test_goodput_says_when_the_times_only_go_back_and_nothing_explains_it(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(_glog(10, 0, 0, "completed step: 1, seconds: 2.000") + "\n" +
                   _glog(10, 0, 0, "completed step: 2, seconds: 2.000") + "\n")
    assert main(["goodput", str(log), "--format", "json", "--year", "2024"]) == 0
    nulls = json.loads(capsys.readouterr().out)["goodput"]["nulls"]
    assert "no timestamps" not in nulls["wall_s"] and "is not after its first" in nulls["wall_s"]


DUMP = ('Thread 4242 (idle): "MainThread"\n'
        '    wait (/app/(x)<script>x</script>.py:12)\n'
        '    all_reduce (jax/_src/distributed.py:88)\n'
        '    train_step (train.py:40)\n')


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit"])
def test_hang_stacks_quotes_a_frame_it_cannot_read_and_judges_the_rest(fmt, tmp_path, capsys):
    """A frame whose path holds parentheses and markup: before, the whole dump was refused (exit 2). Now that
    frame is kept, quoted as printed, the rest is judged (a collective), and the markup is escaped in every format."""
    dump = tmp_path / "worker-0.txt"
    dump.write_text(DUMP)
    assert main(["hang", "--stacks", str(dump), "--format", fmt]) in (0, 1)
    out = capsys.readouterr().out
    assert "collective" in out or fmt == "junit"
    if fmt == "html":
        assert "<script>" not in out and "&lt;script&gt;" in out
    if fmt == "junit":
        ET.fromstring(out)
        assert "<script>" not in out
    if fmt == "markdown":  # raw only where Markdown shows text as code: fenced blocks and code spans
        prose = re.sub(r"```.*?```", "", out, flags=re.S)
        assert "<script>" not in re.sub(r"`[^`\n]*`", "", prose)
    if fmt == "json":
        frames = json.loads(out)["processes"][0]["stack"]
        assert frames[0]["function"] == "wait (/app/(x)<script>x</script>.py:12)" and frames[0]["line"] == 2
        assert [f["function"] for f in frames[1:]] == ["all_reduce", "train_step"]


def test_hang_stacks_says_dev_null_is_empty_not_missing(capsys):
    assert main(["hang", "--stacks", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "/dev/null: is empty (not a regular file)" in err and "no such file" not in err


@pytest.mark.parametrize("pid", ["-5", "0"])
def test_hang_pid_that_is_not_a_process_id_is_a_usage_error(pid, capsys):
    assert main(["hang", "--pid", pid]) == 2
    err = capsys.readouterr().err
    assert f"--pid {pid}: not a valid process id" in err and "no such process" not in err


@pytest.mark.parametrize("content", [b"", bytes(range(256)) * 64], ids=["empty", "binary"])
def test_an_unreadable_log_warns_and_fail_on_warn_gates_on_it(content, tmp_path, capsys):
    """An empty or binary log is a WARN (never a PASS); under the default --fail-on fail check exits 0, and
    --fail-on warn (the documented way for a CI to gate on it) exits 1."""
    log = tmp_path / "train.log"
    log.write_bytes(content)
    assert main(["check", "--step", "4", "--log-file", str(log), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert next(r for r in report["results"] if r["id"] == "LOGS-001")["status"] == "WARN"
    assert main(["check", "--step", "4", "--log-file", str(log), "--format", "json", "--fail-on", "warn"]) == 1


@pytest.mark.parametrize("command", [["goodput", "train.log"], ["hang", "--pid", "4242"]])
def test_an_unknown_time_zone_is_a_usage_error_naming_the_forms(command, capsys):
    assert main([*command, "--tz", "Mars/Olympus"]) == 2
    err = capsys.readouterr().err
    assert "--tz: unknown time zone 'Mars/Olympus'" in err and "local" in err and "+05:30" in err


def test_goodput_reads_zone_less_times_in_the_zone_given(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text("\n".join(_glog(10, 0, 2 * i, f"completed step: {i}, seconds: 2.000") for i in range(5)) + "\n")
    assert main(["goodput", str(log), "--format", "json", "--year", "2024", "--tz", "+05:30"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["wall_start"] == "2024-08-13T04:30:00Z" and doc["clock"]["zone"] == "times without a zone are read as +05:30"
