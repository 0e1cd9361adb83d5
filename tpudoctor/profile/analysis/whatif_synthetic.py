"""Synthetic what-if input: the map tables of ``hosts`` x ``chips`` devices running ``steps`` steps of
``collectives`` sync points each, one host slower by ``delay_ms`` before every collective
(``benchmarks/whatif_64_hosts.py`` and the tests; the model's own arithmetic is exact on it)."""

from __future__ import annotations

import numpy as np

from tpudoctor.profile.analysis.whatif_tables import COLLECTIVES_TABLE, STEPS_TABLE


def synthetic_tables(hosts: int = 64, steps: int = 100, *, chips: int = 1, collectives: int = 2,
                     compute_ms: float = 10.0, transfer_ms: float = 1.0, delay_ms: float = 5.0, slow_host: int = 3,
                     noise_ms: float = 0.0, seed: int = 0) -> dict[str, dict[str, list[dict]]]:
    """Host name -> its ``HostResult.tables`` (``whatif_collectives`` and ``whatif_steps``), epoch ns."""
    rng = np.random.default_rng(seed)
    n_dev, ms = hosts * chips, 1_000_000
    t = np.full(n_dev, 1.7e18)
    coll = [[] for _ in range(hosts)]
    spans = [[] for _ in range(hosts)]
    slow = np.arange(n_dev) // chips == slow_host
    for step in range(steps):
        begin = t.copy()
        for seq in range(collectives):
            work = compute_ms + noise_ms * rng.random(n_dev) + np.where(slow, delay_ms, 0.0)
            arrive = t + work * ms
            done = arrive.max() + transfer_ms * ms
            for d in range(n_dev):
                coll[d // chips].append({"step_index": step, "step_num": step, "core": f"TPU:{d % chips}", "seq": seq,
                                         "name": f"all-reduce.{seq}", "start_at_ns": int(arrive[d]),
                                         "end_at_ns": int(done)})
            t = np.full(n_dev, done)
        for d in range(n_dev):
            spans[d // chips].append({"step_index": step, "step_num": step, "core": f"TPU:{d % chips}",
                                      "start_at_ns": int(begin[d]), "end_at_ns": int(t[d])})
    return {f"host{h:03d}": {COLLECTIVES_TABLE: coll[h], STEPS_TABLE: spans[h]} for h in range(hosts)}
