"""pandas imported by a thread while the command's thread loads a capture (``tpudoctor.captures.xspace.overlap``):
the same report as the serial load, the load's errors and the import's as they are without it."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading

import pytest
from paths import REPO
from profile_oracle import GPU_CAPTURE, shared_file

from tpudoctor.captures import wire
from tpudoctor.captures.schema import message_class
from tpudoctor.captures.xspace import LoadOptions, decode_host, reader
from tpudoctor.captures.xspace.overlap import importing, spare_cores
from tpudoctor.errors import InputError

# `tpudoctor profile analyze` in a process of its own, the load beside pandas' import forced on or off (a busy or
# one-core machine would leave it off; the numpy decoder's small capture too); STREAM_MIN_BYTES 0: the capture read
# plane by plane, as a large one is. It writes whether the load ran beside the import, and whether pandas was
# imported already then.
DRIVER = """
import sys
from tpudoctor.command_process import leave_out_pyarrow, mark_ends_after_command, one_blas_thread
mark_ends_after_command(); one_blas_thread(); leave_out_pyarrow()  # as the command does before numpy's import
from tpudoctor.captures.xspace import overlap, reader
reader.STREAM_MIN_BYTES = 0
beside = sys.argv.pop(1) == "beside"
reader._import_beside = lambda decoder: beside
calls = []
def recording(modules):
    calls.append((tuple(modules), "pandas" in sys.modules))
    return overlap.importing(modules)
reader.importing = recording
import atexit
atexit.register(lambda: sys.stderr.write(f"overlapped: {calls}\\n"))
from tpudoctor.cli import run
run()
"""


def _analyze(*argv: str, beside: bool, block: str = "") -> subprocess.CompletedProcess:
    source = (f"import sys; sys.modules[{block!r}] = None\n" if block else "") + DRIVER
    env = {key: value for key, value in os.environ.items() if key != "TPUDOCTOR_DEBUG"}
    return subprocess.run([sys.executable, "-c", source, "beside" if beside else "serial", "profile", "analyze",
                           *argv], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


@pytest.mark.slow
def test_the_report_is_the_serial_loads_with_pandas_imported_beside_it():
    path = str(shared_file(GPU_CAPTURE))
    reports = {}
    for beside in (True, False):
        done = _analyze(path, "--format", "json", beside=beside)
        assert done.returncode in (0, 1), done.stderr
        assert ("overlapped: [(('pandas',), False)]" if beside else "overlapped: []") in done.stderr
        report = json.loads(done.stdout)
        report.pop("duration_s")
        reports[beside] = report
    assert reports[True] == reports[False]
    assert reports[True]["hosts"]


@pytest.mark.slow
def test_an_import_that_fails_beside_the_load_is_the_same_error_as_after_it():
    path = str(shared_file(GPU_CAPTURE))
    errors = []
    for beside in (True, False):
        done = _analyze(path, beside=beside, block="pandas")
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr
        assert ("overlapped: [(('pandas',), True)]" if beside else "overlapped: []") in done.stderr
        errors.append(done.stderr.split("overlapped:")[0])
    assert "internal error: ModuleNotFoundError: import of pandas halted" in errors[0]
    assert errors[0] == errors[1]


def _corrupt_capture() -> bytes:
    space = message_class("XSpace", raw=True)()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].name = "op"
    line = message_class("XLine", raw=True)(id=1, name="l", timestamp_ns=1, events=[b"\x08\x01\x22\x05\x08\x01"])
    plane.lines.append(line.SerializeToString())  # its stat says 5 bytes, 2 follow
    return space.SerializeToString()


@pytest.mark.parametrize("beside", [True, False], ids=["beside", "serial"])
def test_a_load_that_fails_in_the_thread_is_the_same_clear_error(monkeypatch, beside):
    monkeypatch.setattr(reader, "_import_beside", lambda decoder: beside)
    with pytest.raises(InputError, match="^x is corrupt: a field runs past the end of its message$") as raised:
        decode_host(_corrupt_capture(), hostname="h", source="x", options=LoadOptions(decoder="numpy"))
    assert isinstance(raised.value.__cause__, wire.WireError)
    assert not [thread for thread in threading.enumerate() if thread.name == "tpudoctor-import"]


def test_the_modules_are_imported_by_another_thread_and_waited_for():
    """A real module that nothing here has imported, imported by a thread that is done when the body is."""
    name = "xml.dom.pulldom"
    assert name not in sys.modules
    imported_by = []
    real_import_module = importlib.import_module

    def recording(module_name):
        imported_by.append(threading.current_thread())
        return real_import_module(module_name)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(importlib, "import_module", recording)
            with importing((name,)):
                body = threading.current_thread()
        assert name in sys.modules
        assert imported_by and imported_by[0] is not body
        assert not [thread for thread in threading.enumerate() if thread.name == "tpudoctor-import"]
    finally:
        sys.modules.pop(name, None)


def test_an_import_that_fails_in_the_thread_is_raised_by_the_bodys_own_import(monkeypatch):
    """No traceback from the thread; the body's import of the module raises the error, the thread waited for."""
    hooked = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    with pytest.raises(ModuleNotFoundError, match="tpudoctor_no_such_module"):
        with importing(("tpudoctor_no_such_module",)):
            importlib.import_module("tpudoctor_no_such_module")
    assert hooked == []
    assert not [thread for thread in threading.enumerate() if thread.name == "tpudoctor-import"]


def test_an_interrupt_of_the_body_waits_only_for_the_import():
    with pytest.raises(KeyboardInterrupt):
        with importing(("json",)):
            raise KeyboardInterrupt
    assert not [thread for thread in threading.enumerate() if thread.name == "tpudoctor-import"]


def test_spare_cores_is_within_this_process_affinity():
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert 0 <= spare_cores() <= allowed


def test_busy_cores_leave_none_spare(monkeypatch, tmp_path):
    """/proc/loadavg's running tasks (this thread one of them): two more than the cores, none spare; one alone,
    every core this process may use."""
    import builtins

    real_open = builtins.open
    loadavg = tmp_path / "loadavg"

    def reading(path, *args, **kwargs):
        return real_open(loadavg if path == "/proc/loadavg" else path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", reading)
    cores = os.cpu_count()
    loadavg.write_text(f"3.10 2.90 2.50 {cores + 2}/412 99812\n")
    assert spare_cores() == 0
    loadavg.write_text("0.10 0.20 0.30 1/412 99812\n")
    assert spare_cores() == (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores)
    loadavg.write_text("garbled\n")
    assert spare_cores() >= 1
