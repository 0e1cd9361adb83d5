"""``--log-file`` reads any readable stream, and a source that could not be diagnosed is never a PASS.

Issue 20, items 8 and 10: an empty log and a binary file were PASS "no known failure"; a line cut at
4,000 characters hid ``UNAVAILABLE: Socket closed``; a FIFO, ``<(cmd)``, ``/dev/stdin`` and a folder were
refused as "no such file". Every case runs the real command in a subprocess.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tpudoctor.logdiag import Diagnoser
from tpudoctor.logdiag.reading import feed_path
from tpudoctor.logs.sources import binary_reason

CRASH = ("I0501 10:00:00.000000  4242 tpu_runtime.cc:118] Executing program 100 on 8 cores\n"
         "Traceback (most recent call last):\n"
         '  File "/home/me/train.py", line 88, in <module>\n'
         "    batch = next(it)\n"
         "KeyError: 'input_ids'\n")


def check(*args: str, stdin: str | None = None, shell: str | None = None) -> tuple[int, dict]:
    """``tpudoctor check --step 4 --format json ARGS``; ``shell`` runs it through bash instead."""
    if shell is not None:
        command = [shutil.which("bash") or "/bin/bash", "-c", shell]
    else:
        command = [sys.executable, "-m", "tpudoctor", "check", "--step", "4", "--format", "json", *args]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TPUDOCTOR_FORMAT": "json"})
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, (json.loads(done.stdout) if done.stdout.strip().startswith("{") else {"stderr": done.stderr})


def logs001(report: dict) -> dict:
    return next(r for r in report["results"] if r["id"] == "LOGS-001")


def test_an_empty_log_is_a_warning_that_says_so(tmp_path):
    empty = tmp_path / "train.log"
    empty.write_text("")
    code, report = check("--log-file", str(empty))
    result = logs001(report)
    assert result["status"] == "WARN", result
    assert "is empty" in result["message"] and str(empty) in result["message"]
    assert code == 0


def test_a_binary_file_is_a_warning_not_a_pass(tmp_path):
    blob = tmp_path / "checkpoint.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    code, report = check("--log-file", str(blob))
    result = logs001(report)
    assert result["status"] == "WARN" and "not a text log" in result["message"], result
    assert result["evidence"]["unread_sources"][0].startswith(str(blob))


def test_one_unreadable_source_among_good_ones_is_still_named(tmp_path):
    good, blob = tmp_path / "worker0.log", tmp_path / "core"
    good.write_text("I0501 10:00:00.000000 1 a.cc:1] step 1\n")
    blob.write_bytes(b"\x7fELF\x00\x00\x00" * 100)
    _, report = check("--log-file", str(good), "--log-file", str(blob))
    result = logs001(report)
    assert result["status"] == "WARN" and str(blob) in result["message"]
    assert "1 other source" in result["message"]


def test_a_clean_text_log_is_pass(tmp_path):
    clean = tmp_path / "train.log"
    clean.write_text("I0501 10:00:00.000000 1 a.cc:1] step 1\nI0501 10:00:01.000000 1 a.cc:1] step 2\n")
    code, report = check("--log-file", str(clean))
    assert logs001(report)["status"] == "PASS" and code == 0


def test_a_failure_after_4000_characters_on_one_line_is_found(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("x" * 4100 + " UNAVAILABLE: Socket closed\n")
    code, report = check("--log-file", str(log))
    result = logs001(report)
    assert result["status"] == "FAIL" and result["evidence"]["signature"] == "socket-closed", result
    assert code == 1


def test_a_fifo_is_read(tmp_path):
    fifo = tmp_path / "train.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as handle:
            handle.write(CRASH)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    _, report = check("--log-file", str(fifo))
    writer.join(10)
    result = logs001(report)
    assert result["status"] == "WARN" and "KeyError: 'input_ids'" in result["message"], result


def test_process_substitution_is_read():
    script = f"{sys.executable} -m tpudoctor check --step 4 --format json --log-file <(printf %s {shlex.quote(CRASH)})"
    _, report = check(shell=script)
    assert "KeyError: 'input_ids'" in logs001(report)["message"]


def test_dev_stdin_is_read_like_a_dash():
    for path in ("/dev/stdin", "-"):
        _, report = check("--log-file", path, stdin=CRASH)
        assert "KeyError: 'input_ids'" in logs001(report)["message"], path


def test_a_folder_is_every_log_in_it(tmp_path):
    (tmp_path / "worker0.log").write_text("I0501 10:00:00.000000 1 a.cc:1] step 1\n")
    (tmp_path / "worker1.log").write_text(CRASH)
    _, report = check("--log-file", str(tmp_path))
    result = logs001(report)
    assert "worker1.log:5" in result["message"]
    assert sorted(Path(s).name for s in result["evidence"]["sources"]) == ["worker0.log", "worker1.log"]


def test_a_missing_path_is_a_usage_error_naming_it(tmp_path):
    code, report = check("--log-file", str(tmp_path / "nope.log"))
    assert code == 2
    assert "no such file or folder" in report["stderr"] and "nope.log" in report["stderr"]


@pytest.mark.parametrize(("head", "binary"), [
    (b"I0501 10:00:00.000000 1 a.cc:1] step 1\n", False),
    ("\x1b[32mINFO\x1b[0m step 1 — ok é\n".encode(), False),
    (b"step 1\x00\x00\x00", True),
    (bytes(range(1, 32)) * 10, True),
    (bytes(range(128, 256)) * 10, True),
])
def test_binary_is_told_from_text_by_its_first_bytes(head, binary):
    assert (binary_reason(head) is not None) is binary


def test_the_reader_says_what_it_read(tmp_path):
    (tmp_path / "a.log").write_text(CRASH)
    (tmp_path / "b.log").write_text("")
    reads = feed_path(Diagnoser(), str(tmp_path))
    assert [(Path(r.source).name, r.state, r.lines) for r in reads] == [("a.log", "text", 5), ("b.log", "empty", 0)]


def test_capped_stream_gunzips_by_magic_and_refuses_a_bomb_or_too_much_text():
    """memory's text logs go through the log layer's capped stream: gzip told by its bytes (no .gz name), a
    gzip stream past its ratio and a log past its size refused as they are read."""
    import gzip as gzip_module
    import io as io_module

    from tpudoctor.errors import InputError as Refused
    from tpudoctor.logs.sources import TextCaps, capped_stream, decoded_lines

    caps = TextCaps(max_bytes=1 << 20, max_gzip_ratio=50, gzip_bomb_min_bytes=64 << 10, hint="pass less")
    log = b"2024-01-01 Ran out of memory in memory space hbm.\n" * 100
    handle, compressed = capped_stream(io_module.BytesIO(gzip_module.compress(log)), "job.log", caps)
    assert compressed and "".join(decoded_lines(handle)) == log.decode()
    handle, compressed = capped_stream(io_module.BytesIO(log), "job.log", caps)
    assert not compressed and handle.read() == log

    bomb, _ = capped_stream(io_module.BytesIO(gzip_module.compress(b"\0" * (512 << 10))), "bomb", caps)
    with pytest.raises(Refused, match=r"bomb decompresses to more than 50 times its size"):
        bomb.read()
    big, _ = capped_stream(io_module.BytesIO(b"x\n" * (1 << 20)), "big.log", caps)
    with pytest.raises(Refused, match=r"big.log holds more than .* of text") as refused:
        big.read()
    assert refused.value.hint == "pass less"
