"""`hang --stacks` given the same dump twice (the same path, a folder twice, or a copy written with it): one
snapshot, so UNKNOWN, never HUNG "0s apart"; and no command that kills, reports or deletes on such evidence, nor
a kill of pids read from dump files (they are the pids of the host that wrote the dumps). Inputs are the
hostile probe's (2026-12-04, N1 and N19)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tpudoctor.cli import main

DUMP = '''Process 1000: python train.py
Python v3.10.12 (/usr/bin/python3.10)

Thread 1000 (idle): "MainThread"
    wait (threading.py:320)
    all_reduce (torch/distributed/distributed_c10d.py:2117)
    train_step (/app/train.py:40)
    <module> (/app/train.py:90)
'''
DATA_DUMP = '''Process 1002: python train.py
Python v3.10.12 (/usr/bin/python3.10)

Thread 1002 (idle): "MainThread"
    read (/app/data.py:12)
    next_batch (/app/data.py:30)
    train_step (/app/train.py:38)
    <module> (/app/train.py:90)
'''
SIDE_EFFECTS = ("kill -KILL", "report-host-as-faulty", "tpu-vm delete", "queued-resources delete")


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    hs = tmp_path / "hs"
    (hs / "a").mkdir(parents=True)
    for pid in (1000, 1001, 1003):
        (hs / f"w{pid - 1000}.txt").write_text(DUMP.replace("1000", str(pid)))
    (hs / "w2.txt").write_text(DATA_DUMP)
    for name in ("w0.txt", "w1.txt", "w2.txt"):
        shutil.copy(hs / name, hs / "a" / name)
    return hs


def _run(tmp_path: Path, *argv: str) -> tuple[int, str, dict]:
    out = tmp_path / "r.json"
    code = main(["hang", *argv, "--format", "json", "-o", str(out)])
    text_out = tmp_path / "r.txt"
    main(["hang", *argv, "-o", str(text_out), "--exit-zero"])
    return code, text_out.read_text(), json.loads(out.read_text())


def _commands(report: dict) -> list[str]:
    return list((report.get("decision") or {}).get("commands") or [])


@pytest.mark.parametrize("given", [["w0.txt", "w0.txt"], ["a", "a"], ["w0.txt", "a/w0.txt"]])
def test_the_same_dump_twice_is_one_snapshot(tmp_path, dumps, given):
    code, text, report = _run(tmp_path, "--stacks", *[str(dumps / g) for g in given])
    assert report["verdict"] == "unknown" and code == 0
    assert report["samples"] == 1
    assert "0s apart" not in text
    assert "read once" in report["verdict_why"]
    assert not [c for c in _commands(report) if any(s in c for s in SIDE_EFFECTS)]


def test_one_dump_gives_no_side_effect_command_nor_an_empty_host(tmp_path, dumps):
    _, text, report = _run(tmp_path, "--stacks", str(dumps / "w0.txt"))
    assert report["verdict"] == "unknown"
    assert not [c for c in _commands(report) if any(s in c for s in SIDE_EFFECTS)]
    assert "finish on '" not in text
    assert "some seconds apart" in report["decision"]["text"]


def test_pids_read_from_dump_files_are_not_killed_here(tmp_path, dumps):
    files = [str(dumps / f"w{i}.txt") for i in range(4)]
    _, text, report = _run(tmp_path, "--stacks", *files)
    assert "kill -KILL 1000 1001 1002 1003" not in text
    assert not [c for c in _commands(report) if "kill" in c or "--pid" in c]


def test_two_dumps_taken_apart_are_hung_and_say_how_far_apart_without_a_local_kill(tmp_path, dumps):
    later = tmp_path / "later"
    later.mkdir()
    for name in ("w0.txt", "w1.txt", "w2.txt"):
        shutil.copy(dumps / name, later / name)
        stat = (dumps / "a" / name).stat()
        os.utime(dumps / "a" / name, (stat.st_atime - 12, stat.st_mtime - 12))
    code, text, report = _run(tmp_path, "--stacks", str(dumps / "a"), "--stacks", str(later))
    assert report["verdict"] == "hung" and code == 1
    assert "about 12s apart by the files' times" in text
    assert not [c for c in _commands(report) if "kill" in c]
    assert "kill -KILL 1000 1001 1002" in report["decision"]["text"]  # said as what to run on the dumps' host
