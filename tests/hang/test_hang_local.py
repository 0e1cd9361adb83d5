"""tpudoctor hang on small real Python processes (no JAX): a deadlock, a breakpoint, a busy loop, a process
that exits mid-capture, no right to trace, no py-spy, discovery through a (fake) TPU device holder, and
bad input. Every stack is py-spy's, taken from the live process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tpudoctor.cli import main

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and traces with py-spy (Linux)")


@pytest.fixture
def spawn(tmp_path):
    """Start ``python script`` processes; each is SIGKILLed and reaped at the end, whatever happens."""
    procs: list[subprocess.Popen] = []

    def start(name: str, code: str, *, ready: str | None = None, stdin=subprocess.DEVNULL,
              args: tuple[str, ...] = (), settle: bool = True) -> subprocess.Popen:
        script = tmp_path / f"{name}.py"
        script.write_text(textwrap.dedent(code))
        proc = subprocess.Popen([sys.executable, str(script), *args], cwd=tmp_path, stdin=stdin,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        if ready is not None:
            marker = tmp_path / ready
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert proc.poll() is None, f"{name} exited early ({proc.returncode})"
                assert time.monotonic() < deadline, f"{name} never got ready"
                time.sleep(0.05)
            if settle:
                _settled(proc.pid)
            else:
                time.sleep(0.3)  # from the marker to the loop
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)


def _settled(pid: int, quiet_s: float = 0.5, timeout_s: float = 30.0) -> None:
    """Until the main thread has stopped running: asleep (``State: S``, not runnable and waiting for a core,
    which a loaded machine makes last) with its context switches put for ``quiet_s``. It reached the call
    where it blocks, however loaded the machine is."""
    status = Path(f"/proc/{pid}/task/{pid}/status")

    def reading() -> tuple[int, bool]:
        lines = status.read_text().splitlines()
        asleep = any(line.startswith("State:") and line.split()[1] == "S" for line in lines)
        return sum(int(line.split()[1]) for line in lines if "ctxt_switches" in line), asleep

    deadline = time.monotonic() + timeout_s
    (last, _), since = reading(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now, asleep = reading()
        if now != last or not asleep:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
    raise AssertionError(f"process {pid} never settled")


def hang_json(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    out = tmp_path / "hang.json"
    code = main(["hang", "--format", "json", "-o", str(out), *argv])
    return code, json.loads(out.read_text())


DEADLOCK = """\
    import pathlib, threading

    registry_lock = threading.Lock()
    step_lock = threading.Lock()
    flusher_has_registry = threading.Event()


    def flush_metrics():
        with registry_lock:
            flusher_has_registry.set()
            with step_lock:
                pass


    def train_step():
        with step_lock:
            threading.Thread(target=flush_metrics, name="metrics-flusher", daemon=True).start()
            flusher_has_registry.wait()
            pathlib.Path("ready").touch()
            with registry_lock:
                pass


    train_step()
"""


def test_a_deadlock_names_both_threads_and_says_fix_code(spawn, tmp_path):
    proc = spawn("deadlock", DEADLOCK, ready="ready")
    code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "0.5s")
    assert code == 1
    assert report["verdict"] == "hung"
    cause = report["root_cause"]
    assert cause["category"] == "lock" and cause["frame"]["function"] == "train_step"
    assert cause["frame"]["code"] == "with registry_lock:"
    assert "deadlock" in cause["detail"] and "metrics-flusher" in cause["detail"]
    assert report["decision"]["action"] == "FIX CODE" and report["decision"]["confidence"] == "high"
    assert "did not run once" in report["processes"][0]["progress_why"]


BREAKPOINT = """\
    import pathlib


    def train_step(step):
        pathlib.Path("ready").touch()
        breakpoint()
        return step + 1


    train_step(0)
"""


def test_a_breakpoint_left_in_the_code(spawn, tmp_path):
    proc = spawn("debug", BREAKPOINT, ready="ready", stdin=subprocess.PIPE)  # nobody types at the prompt
    code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "0.5s")
    assert code == 1 and report["root_cause"]["category"] == "debugger"
    assert report["root_cause"]["frame"]["function"] == "train_step"
    assert report["decision"]["action"] == "FIX CODE"


BUSY = """\
    import pathlib, time

    with open("train.log", "w") as log:
        for step in range(5):
            log.write(f"I1201 10:00:0{step}.000000 1 train.py:9] completed step: {step}, seconds: 0.010, loss: 1.0\\n")
            log.flush()
        ready = False

        def wait_for_peers():
            pathlib.Path("ready").touch()
            spins = 0
            while not ready:
                spins += 1

        wait_for_peers()
"""


def test_a_busy_loop_after_the_last_step(spawn, tmp_path):
    proc = spawn("busy", BUSY, ready="ready", settle=False)
    code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "1s",
                             "--log-file", str(tmp_path / "train.log"))
    assert code == 1 and report["verdict"] == "hung"
    state = report["processes"][0]
    assert state["last_step"] == 4 and "no step logged" in state["progress_why"]
    assert report["root_cause"]["category"] == "busy", state
    assert report["root_cause"]["frame"]["function"] == "wait_for_peers"
    assert report["decision"]["action"] == "FIX CODE"


EXITS = """\
    import pathlib, time

    pathlib.Path("ready").touch()
    time.sleep(1.0)
"""


def test_a_process_that_exits_during_the_capture_is_its_own_result(spawn, tmp_path):
    proc = spawn("exits", EXITS, ready="ready", settle=False)
    code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "2s")
    findings = {f["id"]: f for f in report["findings"]}
    assert findings["HANG-004"]["status"] == "WARN" and str(proc.pid) in findings["HANG-004"]["message"]
    assert report["processes"][0]["progress"] == "gone"
    assert code == 1


SLEEPER = """\
    import pathlib, time

    def serve():
        pathlib.Path("ready").touch()
        time.sleep(3600)

    serve()
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("capsh") is None,
                    reason="needs root and capsh to drop CAP_SYS_PTRACE for one run")
def test_no_right_to_trace_names_the_fix(spawn, tmp_path):
    proc = spawn("sleeper", SLEEPER, ready="ready")
    out = tmp_path / "denied.json"
    argv = [sys.executable, "-m", "tpudoctor", "hang", "--pid", str(proc.pid), "--interval", "0s", "--format", "json",
            "-o", str(out)]
    done = subprocess.run(["capsh", "--drop=cap_sys_ptrace", "--", "-c", " ".join(argv)], capture_output=True,
                          text=True, timeout=120)
    report = json.loads(out.read_text())
    finding = {f["id"]: f for f in report["findings"]}["HANG-002"]
    assert finding["status"] == "ERROR" and "ptrace" in finding["message"]
    assert "Permission denied" in finding["message"]  # py-spy's own words
    commands = " ".join(finding["remediation"]["commands"])
    assert "sudo" in commands and "SYS_PTRACE" in commands
    assert done.returncode == 1


def test_without_py_spy_the_install_line_and_a_verdict_from_the_logs(spawn, tmp_path, monkeypatch):
    code_text = """\
        import pathlib, time
        with open("train.log", "w") as log:
            pathlib.Path("ready").touch()
            for step in range(100000):
                log.write(f"completed step: {step}, seconds: 0.05, loss: 1.0\\n")
                log.flush()
                time.sleep(0.05)
    """
    proc = spawn("logger", code_text, ready="ready", settle=False)
    monkeypatch.setattr("tpudoctor.hang.stacks.pyspy_path", lambda: None)
    code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "0.6s")
    findings = {f["id"]: f for f in report["findings"]}
    assert findings["HANG-003"]["status"] == "ERROR"
    assert findings["HANG-003"]["remediation"]["commands"] == ["pip install py-spy"]
    assert report["verdict"] == "progressing"  # the process's own open log says it moves
    assert report["steps_per_s"] and report["steps_per_s"] > 1
    assert code == 1  # a process that could not be read is an error, as in check


def test_discovery_finds_the_process_that_holds_the_tpu(spawn, tmp_path, monkeypatch):
    from tpudoctor.testing.fake_host import build_fake_tpu_host

    proc = spawn("holder", SLEEPER, ready="ready")
    env = build_fake_tpu_host(tmp_path / "host", "v4", chips=4, holders=[(proc.pid, ["python3", "train.py"], [0, 1])])
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, report = hang_json(tmp_path, "--interval", "0.3s", "--native", "never")
    (capture,) = report["captures"]
    assert capture["pid"] == proc.pid and capture["devices"] == ["/dev/accel0", "/dev/accel1"]
    assert capture["selected_because"].startswith("holds /dev/accel0")
    assert report["processes"][0]["category"] == "sleeping"


def test_a_token_on_the_command_line_never_reaches_the_report(spawn, tmp_path):
    token = "ya29.a0AfH6SMBq3xYzExampleTokenValue0123456789"
    proc = spawn("serve", SLEEPER, ready="ready", args=("--access_token=" + token,))
    _code, report = hang_json(tmp_path, "--pid", str(proc.pid), "--interval", "0s", "--native", "never")
    assert token not in json.dumps(report)
    assert "<secret>" in report["captures"][0]["cmdline"] or "<access-token>" in report["captures"][0]["cmdline"]


@pytest.mark.parametrize(("argv", "says"), [
    (["--pid", str(2 ** 22 + 11)], "no such process"),
    (["--interval=-1s"], "not a usable duration"),
    (["--replay", "/nonexistent/dumps"], "no capture.json"),
    (["--replay", "x", "--pid", "1"], "give one of them"),
    (["--all-workers"], "need --tpu NAME and --zone ZONE"),
    (["--log-file", "/nonexistent/train.log", "--pid", "1"], "no such file"),
])
def test_bad_input_exits_2_with_a_message(argv, says, capsys):
    assert main(["hang", *argv]) == 2
    assert says in capsys.readouterr().err


def test_a_worker_id_that_libtpu_filled_with_its_warning_is_not_a_worker(monkeypatch):
    """With libtpu installed and no TPU, JAX's start-up sets TPU_WORKER_ID to libtpu's warning text (seen here:
    'WARNING: could not determine TPU worker number, please set env var `TPU_WORKER_ID` manually, ...'); a report
    that names that as the worker is wrong."""
    from tpudoctor.hang.capture import this_worker

    monkeypatch.setenv("TPU_WORKER_ID", "WARNING: could not determine TPU worker number, please set env var "
                                        "`TPU_WORKER_ID` manually, otherwise libtpu.so may not properly initialize.")
    assert this_worker(None) != os.environ["TPU_WORKER_ID"]
    monkeypatch.setenv("TPU_WORKER_ID", "3")
    assert this_worker(None) == "3"
