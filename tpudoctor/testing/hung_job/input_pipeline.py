"""The job's data loader: one shard file per step, read from this process's own folder.

A shard is a little-endian int32 header (how many refinement passes the batch asks for on the device)
followed by the batch's float32 values.
"""

from __future__ import annotations

import os

import numpy as np

NUM_SHARDS = 4
FEATURES = 16
ROWS = 8


def shard_path(folder: str, index: int) -> str:
    return os.path.join(folder, f"shard-{index:03d}.bin")


def shard_bytes(seed: int, passes: int = 1) -> bytes:
    values = np.random.default_rng(seed).normal(size=(ROWS, FEATURES)).astype("<f4")
    return np.int32(passes).astype("<i4").tobytes() + values.tobytes()


def write_shards(folder: str, *, passes: int = 1) -> None:
    os.makedirs(folder, exist_ok=True)
    for index in range(NUM_SHARDS):
        tmp = shard_path(folder, index) + ".tmp"
        with open(tmp, "wb") as handle:
            handle.write(shard_bytes(index, passes))
        os.replace(tmp, shard_path(folder, index))


class ShardReader:
    """Reads the shard for each step, cycling through the folder's shards."""

    def __init__(self, folder: str):
        self.folder = folder

    def next_batch(self, step: int) -> tuple[np.ndarray, int]:
        data = read_shard(shard_path(self.folder, step % NUM_SHARDS))
        passes = int(np.frombuffer(data[:4], "<i4")[0])
        values = np.frombuffer(data[4:], "<f4").reshape(ROWS, FEATURES)
        return values, passes


def read_shard(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
