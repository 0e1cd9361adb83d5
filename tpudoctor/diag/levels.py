"""What each level runs and how big: r1 in seconds (the backend loads, every chip enumerates, device files, the
node's health, versions), r2 in about two minutes (GEMM against a golden and bitwise across chips, sustained
matmul rate, memory bandwidth on arrays of at least 1 GiB, all-reduce along each mesh axis), r3 about fifteen
(r2, then a soak of the matmul with a slowdown detector over time, and the all-reduce across slices where the run
joined several: ``--distributed`` on every worker).

Sizes depend on the backend: a TPU or GPU runs bf16 matmuls big enough to reach its peak; the CPU stand-in
(``--cpu-devices 8`` for eight virtual devices) runs float32 ones that keep r2 near a minute on two cores.
"""

from __future__ import annotations

import dataclasses
from typing import Any

LEVELS = (1, 2, 3)
MEASUREMENTS = {
    1: ("inventory",),
    2: ("inventory", "gemm", "matmul", "hbm", "allreduce"),
    3: ("inventory", "gemm", "matmul", "hbm", "allreduce", "soak", "dcn"),
}


SECOND_LOOK_BUDGET_S = 110.0
"""Seconds of measuring within which an unclear peer comparison may be measured again (``second_look``): r2's two
minutes, less the process's start and the judging. The soak of r3 comes after and has its own length."""


@dataclasses.dataclass(frozen=True)
class Sizes:
    gemm_n: int
    matmul_n: int
    matmul_chain: int
    reps: int
    hbm_bytes: int
    allreduce_bytes: int
    soak_s: float
    soak_windows: int = 10
    hbm_reps: int = 6

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_ACCELERATOR = Sizes(gemm_n=2048, matmul_n=8192, matmul_chain=8, reps=30, hbm_bytes=2**30 * 4,
                     allreduce_bytes=2**28, soak_s=780.0, hbm_reps=10)
_CPU = Sizes(gemm_n=256, matmul_n=640, matmul_chain=8, reps=48, hbm_bytes=2**30, allreduce_bytes=2**22,
             soak_s=780.0, hbm_reps=4)


def sizes_for(backend: str, *, hbm_gib: float | None = None, soak_s: float | None = None,
              reps: int | None = None) -> Sizes:
    """The sizes for ``backend``; ``hbm_gib``, ``soak_s`` and ``reps`` (every timed test's repetitions) override
    (tests make them small)."""
    sizes = _CPU if backend == "cpu" else _ACCELERATOR
    changes: dict[str, Any] = {}
    if hbm_gib is not None:
        changes["hbm_bytes"] = int(hbm_gib * 2**30)
    if soak_s is not None:
        changes["soak_s"] = float(soak_s)
    if reps is not None:
        changes["reps"] = changes["hbm_reps"] = int(reps)
    return dataclasses.replace(sizes, **changes)
