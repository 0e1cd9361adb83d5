"""Coverage-guided fuzzing of the saved check-report reader: python fuzz/atheris_check_report.py -runs=N"""

import tempfile
from pathlib import Path

import atheris
from _harness import run

with atheris.instrument_imports():
    from tpudoctor.report_file import load_check_report

PATH = Path(tempfile.mkdtemp()) / "report.json"


def target(data: bytes) -> None:
    PATH.write_bytes(data)
    load_check_report(PATH)


if __name__ == "__main__":
    run(target)
