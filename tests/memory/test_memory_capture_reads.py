"""``tpudoctor memory`` reads a capture once, through ``tpudoctor.captures`` alone: the file is opened and its
bytes read one time per run (the allocator events, the buffer plans and the program runs all come from that one
pass), and no module of ``tpudoctor/memory`` imports ``tpudoctor.profile`` (lazy imports inside functions too)."""

from __future__ import annotations

import ast
import builtins
import io
import os
from pathlib import Path

import pytest
from paths import REPO
from shared_data import SHARED_DATA as SHARED

from tpudoctor import cli

if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
TPU = SHARED / "xprof_tpu_inference_2.xplane.pb"
MEMORY = REPO / "tpudoctor" / "memory"


class _CountingReader(io.BufferedReader):
    """A file opened for reading that adds what it hands out to a shared tally."""

    def __init__(self, raw, tally: dict[str, int]):
        super().__init__(raw)
        self._tally = tally

    def read(self, size=-1):
        data = super().read(size)
        self._tally["bytes"] += len(data)
        return data

    def readinto(self, buffer):
        count = super().readinto(buffer)
        self._tally["bytes"] += count or 0
        return count


def test_a_memory_run_opens_and_reads_the_capture_once(capsys, monkeypatch):
    if not TPU.exists():
        pytest.skip(f"{TPU} is not here (../shared/data holds the real captures)")
    tally = {"opens": 0, "bytes": 0}
    real_open = builtins.open
    target = os.path.realpath(TPU)

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and "r" in mode and os.path.realpath(file) == target:
            tally["opens"] += 1
            return _CountingReader(real_open(file, "rb", buffering=0), tally)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    code = cli.main(["memory", str(TPU), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert '"plans"' in out  # the run judged the capture (its buffer plans were looked for)
    assert tally["opens"] == 1, tally
    # each byte once; beside them only the 20-byte peeks at each plane's field head that find the planes
    assert TPU.stat().st_size <= tally["bytes"] < TPU.stat().st_size + 1024, tally


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):  # every import, at the top or inside a function
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_memory_module_imports_the_profile_package():
    offenders = {str(path.relative_to(MEMORY)): sorted(n for n in _imported_modules(path)
                                                      if n == "tpudoctor.profile" or n.startswith("tpudoctor.profile."))
                 for path in sorted(MEMORY.rglob("*.py"))}
    offenders = {name: found for name, found in offenders.items() if found}
    assert offenders == {}
