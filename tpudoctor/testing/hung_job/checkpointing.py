"""The job's checkpointer: each process saves its parameters every few steps, atomically (write a
temporary file, then rename it over the last checkpoint)."""

from __future__ import annotations

import io
import os

import numpy as np


class Checkpointer:
    def __init__(self, folder: str, process_id: int):
        os.makedirs(folder, exist_ok=True)
        self.final = os.path.join(folder, f"process-{process_id}.npy")
        self.tmp = os.path.join(folder, f"process-{process_id}.npy.tmp")

    def save(self, step: int, params: dict[str, np.ndarray]) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.concatenate([np.asarray(v).ravel() for v in params.values()]))
        write_atomically(self.tmp, self.final, buffer.getvalue())


def write_atomically(tmp: str, final: str, data: bytes) -> None:
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, final)
