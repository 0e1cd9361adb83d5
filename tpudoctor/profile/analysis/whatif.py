"""What a straggler costs: the step time of a multi-host capture replayed as a chain of sync points.

Each device's timeline is cut at its collectives. A step is a chain of synchronisation points: a
collective completes when its last participant arrives (plus its transfer time), and every device
leaves it together; between two collectives each device runs its own *compute segment* (whatever
it does there: device ops, host work, input: its own time). The model, per collective ``j``::

    arrival[d, j]  = depart[j-1] + segment[d, j]     (segment: from the collective's end to the next arrival)
    complete[j]    = max_d arrival[d, j] + transfer[j]
    depart[j]      = complete[j]

``segment`` and ``transfer`` are measured (clock-corrected like ``cross_host``); replaying them
gives the *simulated* step time, which matches the measured one by construction. The model's own
check is the *modelled* step time: every collective's transfer taken as typical for its place in the
step (the median over the steps), so each wait is predicted by the max of the arrivals instead of
replayed; ``model_error_percent`` is how far that lands from the measured step. The *ideal* replaces each
device's segment by the per-segment median over devices. A host's *saving* is the step time the
job would gain if that host were not slow (its segments capped at the median, every other device
as measured). The *critical path* is the chain of last arrivals; the time by which each last
arrival exceeds its segment's median sums to the slowdown over the ideal, so each host's share of
the slowdown is its part of that excess (shares sum to 1 when there is a slowdown).

The map (``whatif_tables.whatif_tables``) runs where the host's events are, next to ``collectives.host_collectives``
(any executor, Dask included), and carries a few rows per collective; the combine
(``straggler_whatif``) simulates every what-if at once (one array per scenario, a loop over the sync
points), so 64 hosts x 100 steps take well under a second (``benchmarks/whatif_64_hosts.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.whatif_tables import COLLECTIVES_TABLE, STEPS_TABLE

MIN_STEPS = 3
ROWS_TABLE = "straggler_whatif"
"""``HostResult.tables`` names: the map's collectives and step spans, and each host's row of the result."""
KNOWN, UNKNOWN = "known", "unknown"
PER_HOST_COLUMNS = ["host", "devices", "saved_ms", "saved_percent", "slowdown_share", "critical_segments",
                    "excess_ms", "persistent_saved_ms", "persistent_saved_percent", "persistent", "p_value",
                    "onset_step", "priced"]
PRICE_FLOOR_PERCENT = 1.0
"""A host is priced (named, its saving reported) only when its excess is persistent beyond noise
(``analysis.persistence``) and removing that persistent excess saves at least this share of the step."""
PER_CHIP_COLUMNS = ["host", "chip", "saved_ms", "saved_percent", "slowdown_share", "critical_segments", "excess_ms"]
CRITICAL_COLUMNS = ["segment", "step", "host", "chip", "kind", "start_ms", "end_ms", "excess_ms"]
TIMELINE_COLUMNS = ["host", "chip", "step", "segment", "kind", "start_ms", "end_ms", "critical"]
MAX_PICTURE_STEPS = 3


@dataclasses.dataclass
class StragglerWhatIf:
    """The price of the slow hosts. Times per step in ms, ``*_percent`` of the simulated step.

    ``per_host`` (``PER_HOST_COLUMNS``): ``saved_ms``/``saved_percent`` the step time saved if the
    host's segments were all at the median (this removes its random spread as well as a persistent
    excess: on a balanced job it charges the spread to whichever host happened to be last);
    ``persistent_saved_ms``/``_percent`` the saving if only its persistent excess were removed
    (zero unless ``persistent``: above the other devices' median in more steps than chance allows and
    by more than its own spread, ``p_value`` the sign test's), ``onset_step`` when that excess began
    (None: from the first step), ``priced`` persistent and worth ``PRICE_FLOOR_PERCENT``;
    ``spread_ms``: the slowdown that no persistent excess explains (random imbalance); ``slowdown_share`` its share of ``slowdown_ms`` (the simulated step over the
    ideal one); ``critical_segments`` how many segments of the critical path are its own.
    ``per_chip`` the same per device where a host has several (else None). ``critical_path``
    (``CRITICAL_COLUMNS``): the last arrivals through the steps, times from the first step's start.
    ``timeline`` (``TIMELINE_COLUMNS``): every device's segments of the first steps, for a picture.
    ``status`` is ``unknown`` with ``reason`` (what would tell) when the input is too thin."""

    status: str
    reason: str
    hosts: int = 0
    devices: int = 0
    steps: int = 0
    collectives_per_step: float = 0.0
    aligned_by: str = ""
    measured_step_ms: float | None = None
    simulated_step_ms: float | None = None
    modelled_step_ms: float | None = None
    ideal_step_ms: float | None = None
    slowdown_ms: float | None = None
    spread_ms: float | None = None
    per_host: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=PER_HOST_COLUMNS))
    per_chip: pd.DataFrame | None = None
    critical_path: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=CRITICAL_COLUMNS))
    timeline: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=TIMELINE_COLUMNS))
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.status == KNOWN

    @property
    def simulation_error_percent(self) -> float | None:
        if not self.measured_step_ms or self.simulated_step_ms is None:
            return None
        return 100 * (self.simulated_step_ms - self.measured_step_ms) / self.measured_step_ms

    @property
    def model_error_percent(self) -> float | None:
        """The modelled step (waits predicted, transfers typical) against the measured one."""
        if not self.measured_step_ms or self.modelled_step_ms is None:
            return None
        return 100 * (self.modelled_step_ms - self.measured_step_ms) / self.measured_step_ms

    def saving_of(self, host: str) -> float | None:
        rows = self.per_host[self.per_host["host"] == host]
        return None if rows.empty else float(rows["saved_ms"].iloc[0])

    def persistent_straggler_host(self) -> str | None:
        """The priced host whose persistent excess costs the most per step (the one the report names); None when no
        host is priced."""
        if "priced" not in self.per_host:
            return None
        priced = self.per_host[self.per_host["priced"].astype(bool)]
        return None if priced.empty else str(priced.loc[priced["persistent_saved_ms"].fillna(0).idxmax(), "host"])

    def to_dict(self, max_rows: int = 200) -> dict[str, Any]:
        """Plain JSON-ready data (the report's ``analyses.straggler_whatif``)."""
        def recs(frame, limit=max_rows):
            return [] if frame is None else [{k: _plain(v) for k, v in r.items()}
                                             for r in frame.head(limit).to_dict(orient="records")]
        return {"status": self.status, "reason": self.reason, "hosts": self.hosts, "devices": self.devices,
                "steps": self.steps, "collectives_per_step": _plain(self.collectives_per_step),
                "aligned_by": self.aligned_by, "measured_step_ms": _plain(self.measured_step_ms),
                "simulated_step_ms": _plain(self.simulated_step_ms), "ideal_step_ms": _plain(self.ideal_step_ms),
                "slowdown_ms": _plain(self.slowdown_ms), "spread_ms": _plain(self.spread_ms),
                "priced_hosts": [str(h) for h in self.per_host.loc[self.per_host["priced"].astype(bool), "host"]]
                if "priced" in self.per_host else [],
                "persistent_straggler_host": self.persistent_straggler_host(),
                "simulation_error_percent": _plain(self.simulation_error_percent),
                "modelled_step_ms": _plain(self.modelled_step_ms),
                "model_error_percent": _plain(self.model_error_percent),
                "per_host": recs(self.per_host.sort_values("saved_ms", ascending=False, kind="stable")),
                "per_chip": recs(self.per_chip) if self.per_chip is not None else None,
                "critical_path": recs(self.critical_path), "critical_path_segments": int(len(self.critical_path)),
                "timeline": recs(self.timeline, 1000), "notes": list(self.notes)}


def _plain(v):
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return None if not np.isfinite(v) else round(v, 4)
    return v


# ---- the combine --------------------------------------------------------------------------------

@dataclasses.dataclass
class Timelines:
    """Aligned device timelines: ``devices`` (host, chip) pairs; arrays of epoch ns, one row per
    device: ``arrive``/``leave`` (devices x sync points), ``start``/``stop`` of the first and last
    step; ``step_of``/``seq_of``/``names`` per sync point."""

    devices: list[tuple[str, str]]
    arrive: np.ndarray
    leave: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    step_of: np.ndarray
    seq_of: np.ndarray
    names: list[str]
    aligned_by: str


def timelines_from_tables(tables: Mapping[str, Mapping[str, list[dict]]]) -> Timelines | str:
    """Host -> its ``HostResult.tables``; the aligned timelines, or why there are none."""
    usable = {h: t for h, t in tables.items() if t.get(COLLECTIVES_TABLE)}
    if len(tables) < 2:
        return "one host: nothing waits for another (a capture of two or more hosts would tell)"
    if len(usable) < 2:
        return ("no collectives on two or more hosts: no sync point to cut the steps at (a capture with "
                "the all-reduce/all-gather ops of the step would tell)")
    coll = pd.concat([pd.DataFrame(t[COLLECTIVES_TABLE]).assign(host=h) for h, t in usable.items()],
                     ignore_index=True)
    spans = pd.concat([pd.DataFrame(t[STEPS_TABLE]).assign(host=h) for h, t in usable.items()], ignore_index=True)
    by_num = coll["step_num"].notna().all() and spans["step_num"].notna().all()
    key = "step_num" if by_num else "step_index"
    return build_timelines(coll.assign(step=coll[key].astype("int64")), spans.assign(step=spans[key].astype("int64")),
                           "step_num" if by_num else "step_order")


def build_timelines(coll: pd.DataFrame, spans: pd.DataFrame, aligned_by: str = "step_num") -> Timelines | str:
    """``coll``: ``host``, ``core``, ``step``, ``seq``, ``name``, ``start_at_ns``, ``end_at_ns``;
    ``spans``: ``host``, ``core``, ``step``, ``start_at_ns``, ``end_at_ns``."""
    coll = coll.assign(device=coll["host"].astype(str) + "\t" + coll["core"].astype(str))
    devices = sorted(coll["device"].unique())
    n_dev = len(devices)
    counts = coll.groupby(["step", "seq"])["device"].nunique()
    common = counts[counts == n_dev].index
    if len(common) == 0:
        return "no collective is on every device: the hosts ran different steps"
    keys = pd.MultiIndex.from_tuples(sorted(common), names=["step", "seq"])
    steps = np.unique(keys.get_level_values("step"))
    if len(steps) < MIN_STEPS:
        return (f"too few steps ({len(steps)} < {MIN_STEPS}) with a collective on every host: a longer capture "
                "would tell")
    coll = coll.drop_duplicates(["device", "step", "seq"]).set_index(["step", "seq"])
    coll = coll[coll.index.isin(keys)]
    arrive = coll.pivot_table(index=["step", "seq"], columns="device", values="start_at_ns", aggfunc="first")
    leave = coll.pivot_table(index=["step", "seq"], columns="device", values="end_at_ns", aggfunc="first")
    arrive, leave = arrive.reindex(index=keys, columns=devices), leave.reindex(index=keys, columns=devices)
    names = coll.groupby(level=["step", "seq"])["name"].first().reindex(keys).astype(str).tolist()
    spans = spans.assign(device=spans["host"].astype(str) + "\t" + spans["core"].astype(str))
    first = spans[spans["step"] == steps[0]].groupby("device")["start_at_ns"].min().reindex(devices)
    last = spans[spans["step"] == steps[-1]].groupby("device")["end_at_ns"].max().reindex(devices)
    a, e = arrive.to_numpy(np.float64).T, leave.to_numpy(np.float64).T
    start = np.fmin(first.to_numpy(np.float64), a[:, 0])
    stop = np.fmax(last.to_numpy(np.float64), e[:, -1])
    start = np.where(np.isnan(start), a[:, 0], start)
    stop = np.where(np.isnan(stop), e[:, -1], stop)
    pairs = [tuple(d.split("\t", 1)) for d in devices]
    return Timelines(pairs, a, e, start, stop, keys.get_level_values("step").to_numpy(),
                     keys.get_level_values("seq").to_numpy(), names, aligned_by)


def clock_offsets_ns(t: Timelines) -> np.ndarray:
    """Per device, its host's clock offset: devices leave a collective together, so a host whose
    collective ends are always off the median end by the same amount has a clock off by that much
    (``cross_host.estimate_clock_offsets_ns``'s estimate, over every sync point)."""
    off = np.nanmedian(t.leave - np.nanmedian(t.leave, axis=0, keepdims=True), axis=1)
    hosts = np.array([h for h, _ in t.devices])
    out = np.zeros(len(hosts))
    for h in np.unique(hosts):
        out[hosts == h] = np.nanmedian(off[hosts == h])
    return np.nan_to_num(out)


def simulate(segments: np.ndarray, transfer: np.ndarray, tail: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replay scenarios of the sync chain. ``segments``: scenarios x devices x sync points (ns of
    own work before each collective, the first counted from the common start); ``transfer``: per
    sync point; ``tail``: scenarios x devices (own work after the last collective). Returns each
    scenario's total time, the completion time of every sync point (scenarios x sync points) and
    the last arrival's device index (scenarios x sync points)."""
    n_s, _, n_j = segments.shape
    depart = np.zeros(n_s)
    complete = np.empty((n_s, n_j))
    last = np.empty((n_s, n_j), np.int64)
    for j in range(n_j):
        arrive = depart[:, None] + segments[:, :, j]
        last[:, j] = arrive.argmax(axis=1)
        depart = arrive.max(axis=1) + transfer[j]
        complete[:, j] = depart
    total = (depart[:, None] + tail).max(axis=1)
    return total, complete, last


def typical_transfer(transfer: np.ndarray, t: Timelines) -> np.ndarray:
    """Each sync point's transfer as the median over the steps of the same collective (its place in the step
    and its name): what the model predicts with, knowing no step's own transfer."""
    keys = [(int(seq), name) for seq, name in zip(t.seq_of, t.names, strict=True)]
    by_key: dict[tuple[int, str], list[float]] = {}
    for key, value in zip(keys, transfer, strict=True):
        by_key.setdefault(key, []).append(float(value))
    medians = {key: float(np.median(values)) for key, values in by_key.items()}
    return np.array([medians[key] for key in keys])


def straggler_whatif(tables: Mapping[str, Mapping[str, list[dict]]]) -> StragglerWhatIf:
    """Host -> its ``HostResult.tables`` (the map's ``whatif_tables``): the what-if result."""
    t = timelines_from_tables(tables)
    if isinstance(t, str):
        return StragglerWhatIf(UNKNOWN, t, hosts=len(tables))
    return whatif_of(t)


def whatif_of(t: Timelines) -> StragglerWhatIf:
    """The what-if of aligned timelines (see the module docstring)."""
    off = clock_offsets_ns(t)
    arrive, leave = t.arrive - off[:, None], t.leave - off[:, None]
    start, stop = t.start - off, t.stop - off
    t0 = float(np.nanmin(start))
    n_dev, n_j = arrive.shape
    # a collective completes when the devices leave it (their median end: they leave together, up to
    # the protocol's own skew); a device's segment runs from there to its next arrival
    complete_at = np.nanmedian(leave, axis=0)
    transfer = np.maximum(complete_at - np.nanmax(arrive, axis=0), 0.0)
    seg = np.empty_like(arrive)
    seg[:, 0] = arrive[:, 0] - t0
    seg[:, 1:] = arrive[:, 1:] - complete_at[None, :-1]
    seg = np.maximum(np.nan_to_num(seg), 0.0)
    tail = np.maximum(np.nan_to_num(stop - complete_at[-1]), 0.0)
    med, tail_med = np.median(seg, axis=0), float(np.median(tail))
    hosts = [h for h, _ in t.devices]
    host_names = sorted(set(hosts))
    chips_per_host = pd.Series(hosts).value_counts()
    per_chip = bool((chips_per_host > 1).any())
    scenarios = [seg, np.broadcast_to(med, seg.shape)]
    tails = [tail, np.full(n_dev, tail_med)]
    groups = [np.array([h == name for h in hosts]) for name in host_names]
    if per_chip:
        groups += [np.eye(n_dev, dtype=bool)[d] for d in range(n_dev)]
    for g in groups:
        fixed = seg.copy()
        fixed[g] = np.minimum(seg[g], med)
        scenarios.append(fixed)
        tail_fixed = tail.copy()
        tail_fixed[g] = np.minimum(tail[g], tail_med)
        tails.append(tail_fixed)
    tests, persistent_scenarios = _persistent_excess(t, seg, med, host_names, hosts)
    scenarios += persistent_scenarios
    tails += [tail] * len(persistent_scenarios)
    total, complete, last = simulate(np.stack(scenarios), transfer, np.stack(tails))
    modelled_total = simulate(seg[None], typical_transfer(transfer, t), tail[None])[0][0]
    steps = np.unique(t.step_of)
    n_steps = len(steps)
    measured = (float(np.nanmax(stop)) - t0) / n_steps / 1e6
    simulated, ideal = total[0] / n_steps / 1e6, total[1] / n_steps / 1e6
    n_groups = len(groups)
    saved = (total[0] - total[2:2 + n_groups]) / n_steps / 1e6
    kept = (total[0] - total[2 + n_groups:]) / n_steps / 1e6
    # the critical path: the last arrival at every sync point, then the device that finishes last
    crit = last[0]
    excess = seg[crit, np.arange(n_j)] - med
    depart = np.r_[0.0, complete[0, :-1]]
    tail_dev = int(np.argmax(complete[0, -1] + tail))
    tail_excess = float(tail[tail_dev] - tail_med)
    dev_excess = np.zeros(n_dev)
    np.add.at(dev_excess, crit, np.maximum(excess, 0.0))
    dev_excess[tail_dev] += max(tail_excess, 0.0)
    dev_segments = np.bincount(crit, minlength=n_dev) + (np.arange(n_dev) == tail_dev)
    slowdown = simulated - ideal
    total_excess = float(dev_excess.sum())
    share = dev_excess / total_excess if total_excess > 0 and slowdown > 0 else np.zeros(n_dev)
    host_idx = np.array([host_names.index(h) for h in hosts])
    host_share = np.bincount(host_idx, weights=share, minlength=len(host_names))
    host_excess = np.bincount(host_idx, weights=dev_excess, minlength=len(host_names)) / n_steps / 1e6
    host_segments = np.bincount(host_idx, weights=dev_segments, minlength=len(host_names)).astype(int)
    per_host = pd.DataFrame({"host": host_names, "devices": [int(chips_per_host[h]) for h in host_names],
                             "saved_ms": saved[:len(host_names)],
                             "saved_percent": 100 * saved[:len(host_names)] / simulated if simulated > 0 else 0.0,
                             "slowdown_share": host_share, "critical_segments": host_segments,
                             "excess_ms": host_excess})
    persistent = np.array([tests[h].persistent for h in host_names])
    per_host["persistent_saved_ms"] = np.where(persistent, kept, 0.0)
    per_host["persistent_saved_percent"] = 100 * per_host["persistent_saved_ms"] / simulated if simulated > 0 else 0.0
    per_host["persistent"] = persistent
    per_host["p_value"] = [tests[h].p_value for h in host_names]
    per_host["onset_step"] = pd.Series([None if tests[h].onset_index is None else int(steps[tests[h].onset_index])
                                        for h in host_names], dtype=object)
    per_host["priced"] = persistent & (per_host["persistent_saved_percent"] >= PRICE_FLOOR_PERCENT)
    spread = max(slowdown - float(per_host.loc[per_host["priced"], "persistent_saved_ms"].sum()), 0.0)
    chips = None
    if per_chip:
        s = saved[len(host_names):]
        chips = pd.DataFrame({"host": hosts, "chip": [c for _, c in t.devices], "saved_ms": s,
                              "saved_percent": 100 * s / simulated if simulated > 0 else 0.0, "slowdown_share": share,
                              "critical_segments": dev_segments.astype(int), "excess_ms": dev_excess / n_steps / 1e6})
    ms = 1e6
    rows = []
    for j in range(n_j):
        d = int(crit[j])
        label = f"step {int(t.step_of[j])} before {t.names[j]}"
        rows.append((label, int(t.step_of[j]), t.devices[d][0], t.devices[d][1], "compute", depart[j] / ms,
                     (depart[j] + seg[d, j]) / ms, excess[j] / ms))
        rows.append((f"step {int(t.step_of[j])} {t.names[j]}", int(t.step_of[j]), t.devices[d][0], t.devices[d][1],
                     "collective", (depart[j] + seg[d, j]) / ms, complete[0, j] / ms, 0.0))
    rows.append((f"step {int(steps[-1])} after the last collective", int(steps[-1]), t.devices[tail_dev][0],
                 t.devices[tail_dev][1], "compute", complete[0, -1] / ms, (complete[0, -1] + tail[tail_dev]) / ms,
                 tail_excess / ms))
    critical = pd.DataFrame(rows, columns=CRITICAL_COLUMNS)
    timeline = _timeline(t, seg, depart, complete[0], crit, steps[:MAX_PICTURE_STEPS])
    notes = []
    if np.any(np.abs(off) > 0):
        notes.append(f"clock offsets corrected: up to {np.max(np.abs(off)) / 1e3:.0f} us")
    return StragglerWhatIf(KNOWN, "simulated", hosts=len(host_names), devices=n_dev, steps=n_steps,
                           collectives_per_step=n_j / n_steps, aligned_by=t.aligned_by, measured_step_ms=measured,
                           simulated_step_ms=simulated, modelled_step_ms=modelled_total / n_steps / 1e6,
                           ideal_step_ms=ideal, slowdown_ms=slowdown, spread_ms=spread, per_host=per_host,
                           per_chip=chips, critical_path=critical, timeline=timeline, notes=notes)


TIME_CLASSES = {"compute": "compute", "input": "input", "collective": "collective wait",
                "idle": "host or input",  # the device idle: host work or the input pipeline
                "host_callback": "host", "host_offload": "host", "host_transfer": "host", "outfeed": "host",
                "other": "host", "compile": "host"}
"""Step-breakdown part -> the kind of time a host's excess is (``time_classes``)."""


def time_classes(result: StragglerWhatIf, breakdowns: Mapping[str, list[dict]]) -> None:
    """Set ``per_host["time_class"]``: for a priced host, the step-breakdown part (``<part>_ms`` per step,
    ``BreakdownFigures.per_step``) by which its mean step exceeds the other hosts' median most, as
    compute, input, collective wait or host; ``unknown`` without a breakdown; empty for hosts not priced."""
    if not result.known or result.per_host.empty:
        return
    means = {}
    for host, steps in breakdowns.items():
        if steps:
            frame = pd.DataFrame(steps)
            means[host] = {part: float(frame[f"{part}_ms"].mean()) for part in TIME_CLASSES if f"{part}_ms" in frame}
    classes = []
    for row in result.per_host.to_dict(orient="records"):
        host = str(row["host"])
        if not row.get("priced"):
            classes.append("")
            continue
        mine, others = means.get(host), [v for h, v in means.items() if h != host]
        if not mine or not others:
            classes.append("unknown")
            continue
        excess = {part: mine[part] - float(np.median([o.get(part, 0.0) for o in others])) for part in mine}
        part = max(excess, key=excess.get)
        classes.append(TIME_CLASSES[part] if excess[part] > 0 else "unknown")
    result.per_host["time_class"] = classes


def _persistent_excess(t: Timelines, seg: np.ndarray, med: np.ndarray, host_names: list[str],
                       hosts: list[str]) -> tuple[dict, list[np.ndarray]]:
    """Per host, the test of its per-step excess over the median device (``persistence.excess_test``),
    and per host the scenario with only its persistent excess removed: each of its segments less the
    median over the steps (since the onset) of its excess at that place in the step."""
    from tpudoctor.profile.analysis.persistence import excess_test

    steps, step_idx = np.unique(t.step_of, return_inverse=True)
    over = seg - med[None, :]
    tests, scenarios = {}, []
    for name in host_names:
        rows = np.array([h == name for h in hosts])
        per_step = np.bincount(step_idx, weights=over[rows].max(axis=0), minlength=len(steps))
        test = excess_test(per_step, len(host_names))
        tests[name] = test
        fixed = seg.copy()
        since = step_idx >= (test.onset_index or 0)
        for seq in np.unique(t.seq_of):
            cols = np.flatnonzero((t.seq_of == seq) & since)
            if len(cols):
                typical = np.clip(np.median(over[np.ix_(rows, cols)], axis=1), 0, None)
                fixed[np.ix_(rows, cols)] = np.maximum(seg[np.ix_(rows, cols)] - typical[:, None], 0.0)
        scenarios.append(fixed)
    return tests, scenarios


def _timeline(t: Timelines, seg, depart, complete, crit, steps) -> pd.DataFrame:
    """Every device's compute segments and waits in the first ``steps`` (simulated times, ms)."""
    keep = np.flatnonzero(np.isin(t.step_of, steps))
    rows = []
    for j in keep:
        for d, (host, chip) in enumerate(t.devices):
            arrive = depart[j] + seg[d, j]
            step = int(t.step_of[j])
            rows.append((host, chip, step, f"step {step} before {t.names[j]}", "compute", depart[j] / 1e6,
                         arrive / 1e6, bool(crit[j] == d)))
            rows.append((host, chip, step, f"step {step} {t.names[j]}", "collective", arrive / 1e6,
                         complete[j] / 1e6, bool(crit[j] == d)))
    return pd.DataFrame(rows, columns=TIMELINE_COLUMNS)


def host_rows(result: StragglerWhatIf) -> dict[str, dict]:
    """Per host, what the ``straggler-cost`` rule reads: its saving and share, the step times and the
    other hosts' savings (largest first). Plain JSON-ready values."""
    if not result.known:
        return {}
    common = {"measured_step_ms": _plain(result.measured_step_ms), "simulated_step_ms": _plain(result.simulated_step_ms),
              "model_error_percent": _plain(result.model_error_percent),
              "ideal_step_ms": _plain(result.ideal_step_ms), "slowdown_ms": _plain(result.slowdown_ms),
              "hosts": result.hosts, "steps": result.steps,
              "savings": [{"host": r["host"], "saved_ms": _plain(r["saved_ms"]), "saved_percent": _plain(r["saved_percent"]),
                           "slowdown_share": _plain(r["slowdown_share"])}
                          for r in result.per_host.sort_values("saved_ms", ascending=False, kind="stable")
                          .head(8).to_dict(orient="records")]}
    segments = max(len(result.critical_path[result.critical_path["kind"] == "compute"]), 1)
    common["spread_ms"] = _plain(result.spread_ms)
    for entry, r in zip(common["savings"], result.per_host.sort_values("saved_ms", ascending=False, kind="stable")
                        .head(8).to_dict(orient="records"), strict=True):
        entry.update(persistent_saved_ms=_plain(r["persistent_saved_ms"]), priced=bool(r["priced"]))
    out = {}
    for r in result.per_host.to_dict(orient="records"):
        out[str(r["host"])] = {"host": r["host"], "saved_ms": _plain(r["saved_ms"]),
                               "saved_percent": _plain(r["saved_percent"]),
                               "persistent_saved_ms": _plain(r["persistent_saved_ms"]),
                               "persistent_saved_percent": _plain(r["persistent_saved_percent"]),
                               "persistent": bool(r["persistent"]), "priced": bool(r["priced"]),
                               "p_value": _plain(r["p_value"]), "onset_step": _plain(r["onset_step"]),
                               "time_class": r.get("time_class") or None,
                               "slowdown_share": _plain(r["slowdown_share"]),
                               "critical_segments": int(r["critical_segments"]),
                               "critical_fraction": _plain(r["critical_segments"] / segments), **common}
    return out
