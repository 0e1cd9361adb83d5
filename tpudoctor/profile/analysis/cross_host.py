"""Combine the hosts' collective tables: who waits for whom, and the straggler.

The combine step of the cross-host analysis (the map is ``collectives.host_collectives``). Steps
are aligned across hosts by step number (``StepTraceAnnotation``'s ``step_num``), else by their
order (pseudo-steps from program runs), shifted per host to match the collectives' end times. In every aligned step each host *arrives* at the step's
first collective; the collective cannot finish before the last host arrives, so each host
*waits* ``last arrival - own arrival`` inside it (at most the collective's duration) and the rest
of its collective time is *transfer*. A host that is always last makes the others wait: it is
the straggler (HTA's late-start idea: the host whose collective starts late, not the one with
the slowest mean step, which in synchronous training is everybody).

Hosts' clocks differ by their synchronisation error; each host's offset is estimated from the
collectives themselves (hosts leave a collective together) and taken out before arrivals are
compared (``estimate_clock_offsets_ns``).

No straggler is named when the skew is within noise. Two one-sided tests at ``ALPHA`` must both
reject "no host is special":

* a sign (binomial) test on how often the candidate arrives last: under the null each of ``H``
  hosts is last with probability ``1/H``; the p value is Bonferroni-corrected for choosing the
  host that was last most often;
* a Wilcoxon signed-rank test on the candidate's lateness (own arrival minus the median arrival of
  the other hosts, per step): is it above zero?

and the median lateness must be at least ``MIN_DELAY_PERCENT`` of the median step time (a
consistent lateness of microseconds is a clock offset, not a cause).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

ALPHA = 0.01
MIN_DELAY_PERCENT = 2.0
MIN_STEPS = 5
ALIGN_BY_STEP_NUM = "step_num"
ALIGN_BY_ORDER = "step_order"
TESTS = ("sign test on last arrivals (binomial, Bonferroni over hosts) and Wilcoxon signed-rank on "
         f"lateness vs the other hosts' median arrival, both one-sided at alpha={ALPHA}; median lateness "
         f">= {MIN_DELAY_PERCENT}% of the median step")


@dataclasses.dataclass
class Straggler:
    """The straggler decision. ``host`` is None when no host is named; ``decided_by`` says which test
    decided (or why none could run). Times per step: ``delay_ms_median`` is the candidate's median
    lateness vs the other hosts' median arrival; ``cost_ms_per_step`` the mean time by which it
    arrives after the next-latest host (what the job would gain per step without it);
    ``others_wait_ms_per_step`` the mean time each other host waits inside the collective."""

    host: str | None
    candidate: str | None
    steps_compared: int
    last_arrival_steps: int
    last_arrival_p_value: float | None
    lateness_p_value: float | None
    delay_ms_median: float | None
    cost_ms_per_step: float | None
    others_wait_ms_per_step: float | None
    step_ms_median: float | None
    decided_by: str

    @property
    def slowdown_percent(self) -> float | None:
        """The straggler's cost per step as a share of the median step."""
        if self.cost_ms_per_step is None or not self.step_ms_median:
            return None
        return 100 * self.cost_ms_per_step / self.step_ms_median


@dataclasses.dataclass
class CrossHostAnalysis:
    """``per_step`` (one row per aligned step and host): ``step``, ``host``, ``arrival_offset_us``
    (after the first host's arrival), ``is_last``, ``wait_us``, ``transfer_us``, ``collective_us``,
    ``step_us``. ``per_host``: ``host``, ``steps``, ``last_arrivals``, ``step_ms``, ``collective_ms``,
    ``wait_ms``, ``transfer_ms``, ``collective_percent``, ``wait_percent``, ``transfer_percent``
    (of the host's step time in the aligned steps), ``clock_offset_us`` (the correction applied to
    the host's clock, ``estimate_clock_offsets_ns``)."""

    aligned_by: str
    per_step: pd.DataFrame
    per_host: pd.DataFrame
    straggler: Straggler
    notes: list[str] = dataclasses.field(default_factory=list)


PER_STEP_COLUMNS = ["step", "host", "arrival_offset_us", "is_last", "wait_us", "transfer_us", "collective_us", "step_us"]
PER_HOST_COLUMNS = ["host", "steps", "last_arrivals", "step_ms", "collective_ms", "wait_ms", "transfer_ms",
                    "collective_percent", "wait_percent", "transfer_percent", "clock_offset_us"]


def combine_hosts(hosts: Mapping[str, object], *, align_clocks: bool = True) -> CrossHostAnalysis:
    """``hosts``: host name -> ``collectives.HostCollectives`` (the map results). ``align_clocks``:
    correct each host's clock by ``estimate_clock_offsets_ns`` before comparing arrivals."""
    usable = {name: h for name, h in hosts.items() if h.has_collectives}
    notes = []
    relative = [name for name, h in usable.items() if h.clock.startswith("relative")]
    if relative:
        notes.append(f"hosts {', '.join(relative)} have no absolute clock: arrivals cannot be compared")
        usable = {name: h for name, h in usable.items() if name not in relative}
    if len(usable) < 2:
        why = ("fewer than two hosts with collectives: no host waits for another" if len(hosts) >= 2
               else "one host: nothing to compare")
        return _empty(ALIGN_BY_ORDER, why, notes)
    by_num = all(h.per_step["step_num"].notna().all() for h in usable.values())
    aligned_by = ALIGN_BY_STEP_NUM if by_num else ALIGN_BY_ORDER
    frames = []
    offsets = {} if by_num else order_offsets({name: h.per_step for name, h in usable.items()})
    for name, h in usable.items():
        t = h.per_step[h.per_step["arrival_at_ns"].notna()]
        key = t["step_num"].astype("int64") if by_num else pd.Series(np.arange(len(t)) + offsets[name], index=t.index)
        frames.append(pd.DataFrame({"step": key.to_numpy(np.int64), "host": name,
                                    "arrival_at_ns": t["arrival_at_ns"].astype("int64").to_numpy(),
                                    "first_collective_ns": t["first_collective_ns"].to_numpy(np.float64),
                                    "collective_ns": t["collective_ns"].to_numpy(np.float64),
                                    "step_ns": t["step_ns"].to_numpy(np.float64)}))
    long = pd.concat(frames, ignore_index=True)
    long = long.drop_duplicates(["step", "host"])
    in_all = long.groupby("step")["host"].transform("nunique") == len(usable)
    long = long[in_all.to_numpy()].sort_values(["step", "host"], kind="stable").reset_index(drop=True)
    if long.empty:
        return _empty(aligned_by, "no step has a collective on every host", notes)
    clock_offsets = estimate_clock_offsets_ns(long) if align_clocks else {}
    if clock_offsets:
        long["arrival_at_ns"] -= long["host"].map(clock_offsets).to_numpy(np.int64)
    arrivals = long.pivot(index="step", columns="host", values="arrival_at_ns")
    first = arrivals.min(axis=1)
    last = arrivals.max(axis=1)
    long["arrival_offset_us"] = (long["arrival_at_ns"] - long["step"].map(first)).to_numpy(np.float64) / 1e3
    wait_ns = (long["step"].map(last) - long["arrival_at_ns"]).to_numpy(np.float64)
    wait_ns = np.minimum(wait_ns, np.nan_to_num(long["first_collective_ns"].to_numpy(), nan=0.0))
    long["is_last"] = (long["arrival_at_ns"] == long["step"].map(last)).to_numpy()
    long["wait_us"] = wait_ns / 1e3
    long["collective_us"] = long["collective_ns"] / 1e3
    long["transfer_us"] = np.maximum(long["collective_us"] - long["wait_us"], 0.0)
    long["step_us"] = long["step_ns"] / 1e3
    per_step = long[PER_STEP_COLUMNS]
    per_host = _per_host(per_step)
    per_host["clock_offset_us"] = per_host["host"].map(clock_offsets).fillna(0).to_numpy(np.float64) / 1e3
    straggler = decide_straggler(arrivals, step_ms=per_step.groupby("step")["step_us"].max() / 1e3,
                                 wait_ms=per_step.pivot(index="step", columns="host", values="wait_us") / 1e3)
    return CrossHostAnalysis(aligned_by, per_step, per_host, straggler, notes)


MAX_ORDER_SHIFT = 3


def estimate_clock_offsets_ns(long: pd.DataFrame) -> dict[str, int]:
    """Each host's clock offset from the others', from the collectives themselves: hosts leave a
    step's first collective together (it completes for all once the last one arrives), so a host
    whose collective end is always off the step's median end by the same amount has a clock off by
    that much (hosts' clocks on a pod are synchronised only to within NTP/PTP error). Median over
    steps; ``long``: one row per (step, host) with ``arrival_at_ns`` and ``first_collective_ns``."""
    ends = long["arrival_at_ns"].to_numpy(np.float64) + np.nan_to_num(long["first_collective_ns"].to_numpy(np.float64))
    frame = pd.DataFrame({"step": long["step"].to_numpy(), "host": long["host"].to_numpy(), "end": ends})
    frame["off"] = frame["end"] - frame.groupby("step")["end"].transform("median")
    return {str(host): int(round(value)) for host, value in frame.groupby("host")["off"].median().items()}


def order_offsets(tables: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Without step numbers, the n-th step of one host need not be the n-th of another: each host's
    profile starts on its own. Every host leaves a step's collective at about the same time, so each
    host's step order is shifted (by up to ``MAX_ORDER_SHIFT`` steps) to best match the reference
    host's (the one with the most steps) collective end times."""
    ends = {}
    for name, t in tables.items():
        t = t[t["arrival_at_ns"].notna()]
        ends[name] = (t["arrival_at_ns"].astype("int64").to_numpy(np.float64)
                      + np.nan_to_num(t["first_collective_ns"].to_numpy(np.float64)))
    reference = max(ends, key=lambda name: len(ends[name]))
    ref = ends[reference]
    offsets = {}
    for name, own in ends.items():
        best, best_error = 0, np.inf
        for shift in range(-MAX_ORDER_SHIFT, MAX_ORDER_SHIFT + 1):
            # own step i is reference step i + shift
            lo, hi = max(0, -shift), min(len(own), len(ref) - shift)
            if hi - lo < 1:
                continue
            error = float(np.median(np.abs(own[lo:hi] - ref[lo + shift:hi + shift])))
            if error < best_error:
                best, best_error = shift, error
        offsets[name] = best
    return offsets


def _per_host(per_step: pd.DataFrame) -> pd.DataFrame:
    g = per_step.groupby("host", sort=True)
    frame = pd.DataFrame({
        "steps": g.size(), "last_arrivals": g["is_last"].sum().astype(int),
        "step_ms": g["step_us"].sum() / 1e3, "collective_ms": g["collective_us"].sum() / 1e3,
        "wait_ms": g["wait_us"].sum() / 1e3, "transfer_ms": g["transfer_us"].sum() / 1e3,
    }).reset_index()
    total = frame["step_ms"].where(frame["step_ms"] > 0)
    for part in ("collective", "wait", "transfer"):
        frame[f"{part}_percent"] = (100 * frame[f"{part}_ms"] / total).fillna(0.0)
    frame["clock_offset_us"] = 0.0
    return frame[PER_HOST_COLUMNS]


def decide_straggler(arrivals: pd.DataFrame, *, step_ms: pd.Series | None = None,
                     wait_ms: pd.DataFrame | None = None) -> Straggler:
    """``arrivals``: one row per aligned step, one column per host, arrival times (any unit that is
    nanoseconds). See the module docstring for the tests."""
    n_steps, n_hosts = arrivals.shape
    step_median = float(np.median(step_ms)) if step_ms is not None and len(step_ms) else None
    if n_hosts < 2 or n_steps < MIN_STEPS:
        return Straggler(None, None, n_steps, 0, None, None, None, None, None, step_median,
                         f"not enough aligned steps ({n_steps} < {MIN_STEPS}) or hosts ({n_hosts}) to test")
    values = arrivals.to_numpy(np.float64)
    hosts = [str(c) for c in arrivals.columns]
    latest = values.max(axis=1, keepdims=True)
    last_counts = (values == latest).sum(axis=0)
    pick = int(np.argmax(last_counts))
    candidate = hosts[pick]
    others = np.delete(values, pick, axis=1)
    lateness_ns = values[:, pick] - np.median(others, axis=1)
    behind_next_ns = np.maximum(values[:, pick] - others.max(axis=1), 0.0)
    k = int(last_counts[pick])
    p_sign = min(1.0, n_hosts * binomial_tail(k, n_steps, 1.0 / n_hosts))
    p_rank = wilcoxon_greater(lateness_ns)
    delay_ms = float(np.median(lateness_ns)) / 1e6
    cost_ms = float(behind_next_ns.mean()) / 1e6
    others_wait = None
    if wait_ms is not None:
        others_wait = float(wait_ms.drop(columns=[candidate]).to_numpy(np.float64).mean())
    floor_ms = MIN_DELAY_PERCENT / 100 * step_median if step_median else 0.0
    significant = p_sign < ALPHA and p_rank < ALPHA
    big_enough = delay_ms >= floor_ms and delay_ms > 0
    if significant and big_enough:
        decided = (f"{candidate} arrived last in {k} of {n_steps} steps (sign test p={p_sign:.2g}) and "
                   f"{delay_ms:.3g} ms after the others' median arrival (Wilcoxon p={p_rank:.2g}); {TESTS}")
        host = candidate
    else:
        why = []
        if p_sign >= ALPHA:
            why.append(f"last arrivals are spread (most: {candidate} in {k} of {n_steps}, sign test p={p_sign:.2g})")
        if p_rank >= ALPHA:
            why.append(f"lateness is within noise (Wilcoxon p={p_rank:.2g})")
        if significant and not big_enough:
            why.append(f"median lateness {delay_ms:.3g} ms is under {MIN_DELAY_PERCENT}% of the "
                       f"{step_median:.3g} ms step")
        decided = "no straggler: " + "; ".join(why) + f"; {TESTS}"
        host = None
    return Straggler(host, candidate, n_steps, k, p_sign, p_rank, delay_ms, cost_ms, others_wait, step_median, decided)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exact."""
    return float(min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))))


def wilcoxon_greater(differences: np.ndarray) -> float:
    """One-sided Wilcoxon signed-rank p value for "the differences are centred above zero".

    Zeros are dropped (Wilcoxon's method); ties get average ranks. Exact null distribution (all
    2^n sign patterns, by dynamic programming over doubled ranks) up to 60 differences, else the
    normal approximation with tie correction."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d) & (d != 0)]
    n = len(d)
    if n == 0:
        return 1.0
    ranks = pd.Series(np.abs(d)).rank(method="average").to_numpy()
    w_plus = float(ranks[d > 0].sum())
    if n <= 60:
        doubled = np.rint(ranks * 2).astype(np.int64)  # average ranks are multiples of 1/2
        counts = np.zeros(int(doubled.sum()) + 1, dtype=np.float64)
        counts[0] = 1.0
        for r in doubled:
            counts[r:] = counts[r:] + counts[:-r].copy()
        at_least = int(round(w_plus * 2))
        return float(min(1.0, counts[at_least:].sum() / counts.sum()))
    mean = n * (n + 1) / 4
    _, tie_sizes = np.unique(ranks, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - (tie_sizes**3 - tie_sizes).sum() / 48
    z = (w_plus - 0.5 - mean) / math.sqrt(var) if var > 0 else 0.0
    return float(0.5 * math.erfc(z / math.sqrt(2)))


def _empty(aligned_by: str, why: str, notes: list[str]) -> CrossHostAnalysis:
    return CrossHostAnalysis(aligned_by, pd.DataFrame(columns=PER_STEP_COLUMNS), pd.DataFrame(columns=PER_HOST_COLUMNS),
                             Straggler(None, None, 0, 0, None, None, None, None, None, None, f"no straggler test: {why}"),
                             notes)
