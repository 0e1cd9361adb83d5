"""``tpudoctor profile analyze``: inputs of every shape, every bad input its own message and exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from paths import REPO, TESTS
from profile_oracle import TPU_CAPTURE, shared_file

from tpudoctor.captures.schema import message_class
from tpudoctor.cli import main
from tpudoctor.schema import validate


def small_capture(*, device: bool = True, events: int = 50) -> bytes:
    space = message_class("XSpace")()
    if device:
        plane = space.planes.add(id=1, name="/device:TPU:0")
        stat = plane.stat_metadata[1]
        stat.id, stat.name = 1, "device_type_string"
        plane.stats.add(metadata_id=1, str_value="TPU v4")
        plane.event_metadata[1].id = 1
        plane.event_metadata[1].name = "jit_step(1)"
        line = plane.lines.add(id=2, name="XLA Modules", timestamp_ns=1_000)
        for index in range(events):
            line.events.add(metadata_id=1, offset_ps=index * 10_000, duration_ps=9_000)
    host = space.planes.add(id=0, name="/host:CPU")
    host.event_metadata[1].id = 1
    host.event_metadata[1].name = "train_step"
    line = host.lines.add(id=7, name="python3", timestamp_ns=1_000)
    for index in range(events):
        line.events.add(metadata_id=1, offset_ps=index * 10_000, duration_ps=5_000)
    return space.SerializeToString()


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["profile", "analyze", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_file_text_report(tmp_path, capsys):
    path = write(tmp_path / "worker-0.xplane.pb", small_capture())
    code, out, _ = run_cli(capsys, str(path))
    assert code == 1
    assert "Host worker-0" in out and "TPU v4" in out and "/device:TPU:0" in out and "XLA Modules" in out
    assert "100 events" in out


def test_json_report_follows_its_schema(tmp_path, capsys):
    path = write(tmp_path / "w.xplane.pb", small_capture())
    code, out, _ = run_cli(capsys, str(path), "--format", "json")
    assert code == 1
    document = json.loads(out)
    validate(document, "profile_report")
    host = document["summary"]["hosts"][0]
    assert document["schema_version"].startswith("2.")
    assert host["n_events"] == 100 and host["device_kind"] == "TPU v4"
    plane = host["planes"][0]
    assert plane["lines"][0] == {"line_id": 2, "line_name": "XLA Modules", "n_events": 50,
                                 "span_ps": 49 * 10_000 + 9_000}


def test_output_file(tmp_path, capsys):
    path = write(tmp_path / "w.xplane.pb", small_capture())
    target = tmp_path / "out" / "report.json"
    code, out, _ = run_cli(capsys, str(path), "--format", "json", "-o", str(target))
    assert code == 1 and out == ""
    assert json.loads(target.read_text())["kind"] == "profile"


def test_logdir_uses_newest_run_and_run_flag_picks_another(tmp_path, capsys):
    runs = tmp_path / "logs" / "plugins" / "profile"
    write(runs / "2024_01_01_00_00_00" / "a.xplane.pb", small_capture(events=3))
    write(runs / "2024_02_01_00_00_00" / "a.xplane.pb", small_capture(events=4))
    code, out, _ = run_cli(capsys, str(tmp_path / "logs"), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["run"] == "2024_02_01_00_00_00" and summary["n_events"] == 8
    code, out, _ = run_cli(capsys, str(tmp_path / "logs"), "--run", "2024_01_01_00_00_00", "--format", "json")
    assert code == 0 and json.loads(out)["summary"]["n_events"] == 6
    code, _, err = run_cli(capsys, str(tmp_path / "logs"), "--run", "nope")
    assert code == 2 and "run 'nope' is not in" in err and "2024_01_01_00_00_00" in err


def test_multi_host_run_reports_the_bad_host_and_analyses_the_rest(tmp_path, capsys):
    run = tmp_path / "plugins" / "profile" / "2024_03_03_03_03_03"
    write(run / "host-a.xplane.pb", small_capture())
    write(run / "host-b.xplane.pb", small_capture(events=7))
    write(run / "host-c.xplane.pb", b"")
    code, out, _ = run_cli(capsys, str(run), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1
    assert sorted(host["hostname"] for host in summary["hosts"]) == ["host-a", "host-b"]
    assert "empty (0 bytes)" in summary["failed_hosts"]["host-c"]
    code, out, _ = run_cli(capsys, str(run))
    assert "host host-c not loaded" in out


MESSAGES = {
    "zero": "is empty (0 bytes)",
    "truncated": "is truncated",
    "text-copy": "corrupted by a text-mode copy",
    "not-xspace": "is not an XSpace profile",
    "json": "text document",
    "gzip": "gzip-compressed",
    "empty-logdir": "holds no profile",
    "logdir-without-runs": "has no profile runs",
    "missing": "does not exist",
}


def _corrupt_variant(tmp_path: Path, data: bytes, variant: str) -> Path:
    if variant == "empty-logdir":
        (tmp_path / "empty-logdir").mkdir()
        return tmp_path / "empty-logdir"
    if variant == "logdir-without-runs":
        (tmp_path / "no-runs" / "plugins" / "profile").mkdir(parents=True)
        return tmp_path / "no-runs"
    if variant == "missing":
        return tmp_path / "does-not-exist"
    content = {
        "zero": b"",
        "truncated": data[: len(data) // 2],
        "text-copy": data.decode("utf-8", errors="replace").encode("utf-8"),  # what a text-mode copy does
        "not-xspace": b"these are my notes, not a profile\n" * 20,
        "json": b'{"traceEvents": []}',
        "gzip": b"\x1f\x8b\x08\x00" + bytes(40),
    }[variant]
    return write(tmp_path / f"{variant}.xplane.pb", content)


@pytest.mark.parametrize("variant", list(MESSAGES))
def test_bad_input_has_its_own_message_and_exits_2(tmp_path, capsys, variant):
    path = _corrupt_variant(tmp_path, small_capture(events=400), variant)
    code, out, err = run_cli(capsys, str(path))
    assert code == 2
    assert MESSAGES[variant] in err
    assert out == ""
    assert not any(text in err for name, text in MESSAGES.items() if name != variant)


def test_zero_byte_message_explains_the_2gib_limit(tmp_path, capsys):
    path = write(tmp_path / "big.xplane.pb", b"")
    _, _, err = run_cli(capsys, str(path))
    assert "2 GiB" in err


@pytest.mark.parametrize("variant,message", [("truncated", "is truncated"),
                                             ("text-copy", "corrupted by a text-mode copy")])
def test_real_capture_corruptions(tmp_path, capsys, variant, message):
    path = _corrupt_variant(tmp_path, shared_file(TPU_CAPTURE).read_bytes(), variant)
    code, _, err = run_cli(capsys, str(path))
    assert code == 2 and message in err


def test_capture_without_device_planes_is_analysed_with_a_note(tmp_path, capsys):
    path = write(tmp_path / "cpu.xplane.pb", small_capture(device=False))
    code, out, _ = run_cli(capsys, str(path), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1
    assert summary["hosts"][0]["device_kind"] == "CPU only (no device planes)"
    (note,) = summary["notes"]
    assert "no device planes" in note and "it has only: /host:CPU" in note


def test_real_tpu_capture_summary(capsys):
    code, out, _ = run_cli(capsys, str(shared_file(TPU_CAPTURE)), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1 and summary["device_kinds"] == ["TPU v6 Lite"]
    host = summary["hosts"][0]
    assert host["n_device_planes"] == 4 and host["n_events"] == 26_723
    assert 90e12 < host["span_ps"] < 100e12 and host["profile_duration_ns"] > 90e9



def test_gcs_logdir_through_the_storage_emulator(gcs_emulator, capsys):
    bucket = gcs_emulator.create_bucket("profiles")
    run = "job/plugins/profile/2024_05_05_05_05_05"
    bucket.blob(f"{run}/w-0.xplane.pb").upload_from_string(small_capture())
    bucket.blob(f"{run}/w-1.xplane.pb").upload_from_string(small_capture(events=9))
    bucket.blob(f"{run}/w-2.xplane.pb").upload_from_string(b"\x00\x01garbage")
    bucket.blob("job/plugins/profile/2024_01_01_00_00_00/old.xplane.pb").upload_from_string(small_capture(events=1))
    code, out, _ = run_cli(capsys, "gs://profiles/job", "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1, out
    assert summary["run"] == "2024_05_05_05_05_05"
    assert sorted(h["hostname"] for h in summary["hosts"]) == ["w-0", "w-1"]
    assert summary["n_events"] == 100 + 18
    assert "w-2" in summary["failed_hosts"]
    code, out, _ = run_cli(capsys, "gs://profiles/job/plugins/profile/2024_05_05_05_05_05/w-1.xplane.pb")
    assert code == 1 and "Host w-1" in out
    code, _, err = run_cli(capsys, "gs://profiles/nothing-here")
    assert code == 2 and "holds no profile" in err


def test_help_does_not_import_frameworks():
    import subprocess
    import sys

    code = ("import sys; from tpudoctor.cli import main\n"
            "try:\n    main(['profile', 'capture', '--help'])\nexcept SystemExit: pass\n"
            "assert 'tensorflow' not in sys.modules and 'jax' not in sys.modules and 'pandas' not in sys.modules")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("argv,message", [
    (["--service-addr", "no-port", "--logdir", "/tmp/x"], "not a HOST:PORT address"),
    (["--service-addr", "h:1", "--duration", "0s", "--logdir", "/tmp/x"], "--duration must be positive"),
    (["--service-addr", "h:1", "--duration", "soon", "--logdir", "/tmp/x"], "not a duration"),
    (["--service-addr", "h:1", "--all-workers", "--logdir", "/tmp/x"], "--all-workers goes with --tpu"),
    (["--tpu", "my-tpu", "--logdir", "/tmp/x"], "--tpu needs a project and a zone"),
])
def test_capture_usage_errors_exit_2_before_any_framework_loads(capsys, argv, message):
    code = main(["profile", "capture", *argv])
    _, err = capsys.readouterr()
    assert code == 2 and message in err and "Traceback" not in err


def test_profile_without_subcommand_shows_usage(capsys):
    assert main(["profile"]) == 2
    assert "analyze" in capsys.readouterr().err


def test_tpu_name_resolves_to_worker_addresses_through_the_tpu_api(monkeypatch):
    from tpudoctor.errors import InputError
    from tpudoctor.profile.remote import service_addresses_for_tpu
    from tpudoctor.testing.fake_tpu_api import FakeTpuApi, make_node

    with FakeTpuApi() as api:
        monkeypatch.setenv("TPUDOCTOR_TPU_ENDPOINT", api.url)
        api.add_node(make_node("p", "us-central2-b", "pod", workers=4))
        assert service_addresses_for_tpu("pod", project="p", zone="us-central2-b") == ["10.130.0.2:8466"]
        assert service_addresses_for_tpu("pod", project="p", zone="us-central2-b", port=9012, all_workers=True) == [
            f"10.130.0.{i}:9012" for i in range(2, 6)]
        with pytest.raises(InputError, match="cannot look up TPU nope in p/us-central2-b"):
            service_addresses_for_tpu("nope", project="p", zone="us-central2-b", timeout_s=5)


def test_the_command_process_flushes_its_report_and_exits_with_the_code_of_main(tmp_path):
    """``python -m tpudoctor`` (like the console script) ends without tearing the interpreter down."""
    import subprocess
    import sys

    capture = TESTS / "fixtures" / "profiles" / "multihost_slow_host"
    command = [sys.executable, "-m", "tpudoctor", "profile", "analyze"]
    done = subprocess.run([*command, str(capture), "--format", "json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["straggler"]["host"] == "worker2"  # all of it, flushed
    missing = subprocess.run([*command, str(tmp_path / "missing.xplane.pb")], capture_output=True, text=True,
                             timeout=300)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_profile_analyze_exits_1_on_a_fail_finding_in_every_format_junit_too(tmp_path):
    """Issue 39: profile analyze counts its FAIL findings as every other report does (exit 1, the JUnit a
    <failure>), in every format, JUnit included; --exit-zero and --fail-on as for the other commands. An
    input-bound capture FAILs its input rule."""
    import xml.etree.ElementTree as ET

    from tpudoctor.cli import main

    capture = str(TESTS / "fixtures" / "profiles" / "tf_input_bound")
    out = str(tmp_path / "r.json")
    assert main(["profile", "analyze", capture, "--format", "json", "-o", out]) == 1
    findings = json.loads(Path(out).read_text())["findings"]
    assert any(f["status"] == "FAIL" for f in findings)
    for fmt in ("text", "json", "markdown", "html", "junit"):
        assert main(["profile", "analyze", capture, "--format", fmt, "-o", out]) == 1
        assert main(["profile", "analyze", capture, "--format", fmt, "-o", out, "--fail-on", "warn"]) == 1
    suite = ET.parse(out).getroot().find("testsuite")
    assert int(suite.get("failures")) >= 1
    assert main(["profile", "analyze", capture, "--format", "junit", "-o", out, "--exit-zero"]) == 0
    assert ET.parse(out).getroot().find("testsuite").get("failures") == "0"


COMMAND_PROCESS = ("import atexit, os, sys\n"
                   "atexit.register(lambda: sys.stderr.write(f\"pyarrow loaded: {sys.modules.get('pyarrow') is not None}\\n\"))\n"
                   "atexit.register(lambda: sys.stderr.write(f\"threads: {len(os.listdir('/proc/self/task'))}\\n\"))\n"
                   "sys.argv = ['tpudoctor', *sys.argv[1:]]\n"
                   "from tpudoctor.cli import run\n"
                   "run()\n")
"""``tpudoctor.cli.run`` (what the console script runs), saying at exit whether pyarrow was loaded and how many
threads the process has (Linux)."""


def test_the_command_process_reads_an_xspace_capture_without_pyarrow_and_reports_the_same(tmp_path, capsys):
    """Issue 44: the command's own process leaves pyarrow out (pandas' import of it and its string arrays
    were 0.04 s of profile analyze on the 57 MB GPU capture); the report is the one made here, where pandas
    may keep its strings in pyarrow."""
    import subprocess
    import sys

    capture = str(shared_file(TPU_CAPTURE))
    there = tmp_path / "command.json"
    done = subprocess.run([sys.executable, "-c", COMMAND_PROCESS, "profile", "analyze", capture, "--format", "json",
                           "-o", str(there)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "pyarrow loaded: False" in done.stderr
    here = tmp_path / "here.json"
    assert run_cli(capsys, capture, "--format", "json", "-o", str(here))[0] == 1
    reports = [json.loads(path.read_text()) for path in (there, here)]
    for report in reports:
        report.pop("duration_s")
    assert reports[0] == reports[1]


def test_the_command_process_still_reads_an_op_trace_with_pyarrow(tmp_path):
    """An op trace (parquet) needs pyarrow: the command's process keeps it for one."""
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    from shared_data import SHARED_DATA

    trace = SHARED_DATA / "bytedance_straggler" / "trace-ST.parquet"
    if not trace.is_file():
        pytest.skip(f"{trace} is absent (../shared/data lives beside the checkout)")
    out = tmp_path / "whatif.json"
    done = subprocess.run([sys.executable, "-c", COMMAND_PROCESS, "profile", "analyze", str(trace), "--format",
                           "json", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "pyarrow loaded: True" in done.stderr and json.loads(out.read_text())["kind"]


def test_the_command_process_leaves_the_collector_off_after_the_run(tmp_path, capsys, monkeypatch):
    """Issue 44: the collector's first pass after the run (0.02 s on the 57 MB capture) is skipped where the
    process ends right after; a process that goes on (a library's caller, this one) has it back."""
    import gc

    from tpudoctor import command_process

    path = write(tmp_path / "w.xplane.pb", small_capture())
    assert gc.isenabled()
    assert run_cli(capsys, str(path), "--format", "json")[0] == 1
    assert gc.isenabled()
    monkeypatch.setattr(command_process, "_ends_after_command", True)
    try:
        assert run_cli(capsys, str(path), "--format", "json")[0] == 1
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2,
                    reason="threads counted in /proc; OpenBLAS starts none on one core")
def test_the_command_process_starts_no_blas_threads(tmp_path):
    """Issue 44: OpenBLAS started a thread per core as numpy loaded, spinning for work the analyses never give
    (0.04 s of CPU on 2 cores, 1.9 s on 16); the command's process tells it to start none."""
    import subprocess
    import sys

    path = write(tmp_path / "w.xplane.pb", small_capture())
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", COMMAND_PROCESS, "profile", "analyze", str(path), "--format", "json",
                           "-o", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1, done.stderr
    assert "threads: 1\n" in done.stderr
    kept = subprocess.run([sys.executable, "-c", COMMAND_PROCESS, "profile", "analyze", str(path), "--format", "json",
                           "-o", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300,
                          env={**env, "OPENBLAS_NUM_THREADS": "2"})
    assert kept.returncode == 1 and "threads: 2\n" in kept.stderr  # the user's setting stays
