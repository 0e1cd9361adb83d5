"""The ``tpudoctor`` command's own process: ``tpudoctor.cli.run`` (the console script) runs one command in it and
ends it with ``os._exit``. What only a process that goes on needs (a library's caller, the tests' in-process
``cli.main``) can be left out there, and only there: nothing but ``cli.run`` marks a process so."""

from __future__ import annotations

import sys

_ends_after_command = False


def mark_ends_after_command() -> None:
    """``tpudoctor.cli.run``, before the command: this process ends once the command's output is written."""
    global _ends_after_command
    _ends_after_command = True


def ends_after_command() -> bool:
    return _ends_after_command


def leave_out_pyarrow() -> bool:
    """In the command's own process, before pandas is imported: pyarrow is left out of it, as on a machine
    where it is not installed (it is optional: ``tpudoctor[parquet]``, for op traces). pandas 3 imports it
    wherever it is installed (0.02 s) and keeps its string columns in pyarrow arrays, converting every such
    column it makes from Python strings (another 0.02 s of ``profile analyze`` on the 57 MB GPU capture);
    without it the strings stay Python objects, with the same values. For a command that reads no parquet.
    True where it was left out."""
    if not _ends_after_command or "pandas" in sys.modules or "pyarrow" in sys.modules:
        return False  # pandas (or pyarrow itself) loaded already: pandas would find its pyarrow gone
    sys.modules["pyarrow"] = None  # type: ignore[assignment]  # `import pyarrow`: ImportError, as where it is not installed
    return True


def one_blas_thread() -> bool:
    """In the command's own process, before numpy is imported: OpenBLAS (the BLAS numpy's wheels bring) is
    told to start no threads of its own. It starts one per core (up to 64) as numpy loads, and they spin
    waiting for work that a command without linear algebra never gives them: 0.04 s of CPU on a 2-core
    machine, 1.9 s on 16 cores (``import numpy``, 0.33 s of wall there, 0.05 s more). Processes this one starts
    (the per-host analysis pool) inherit it. A value the user set stays. True where it was set here."""
    import os

    if not _ends_after_command or "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True
