"""Where the tests' material lies, for the test modules one folder down (tests/<product>/): the tests folder
(data/, fixtures/, golden/, snapshots/ stay there) and the repository root, named once instead of a depth
per file."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
