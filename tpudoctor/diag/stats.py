"""Peer comparison of timed runs, robust to a loaded host: each device's time in a repetition over the peers'
median in that same repetition, then the median of those ratios over the repetitions. A burst of load falls on
every device of a repetition alike and cancels; a device that is slower in every repetition does not.

The margin a device must exceed is the larger of a floor (5 %: a real fault we want is bigger) and three times
the spread of all devices' figures (a median absolute deviation, so the one slow device does not widen it): a
run whose healthy chips scatter raises the bar instead of flagging one of them. Each device's own noise (the
standard error of its median ratio) is kept beside it: a slow device is ``sure`` only when it is also more than
three of those above its peers (on a loaded host one chip's repetitions can scatter while the others' do not, and
a median of scattered repetitions is weak evidence: the rules WARN on it instead of failing the chip). A sure
device within twice that noise of its margin is flagged with medium confidence, not high.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MIN_PEERS = 3
"""Fewer devices than this: a median of peers cannot single one out."""
FLOOR = 0.05
NOISE_FACTOR = 3.0
OWN_NOISE_FACTOR = 3.0
"""A slow device is ``sure`` when it is also this many standard errors of its own median ratio above its peers."""
STEADY_SPREAD = 0.015
"""A run whose chips' spread exceeds this is noisy: twice the 0.46-0.70 % of calm runs on the CPU stand-in, and
under the 1.67 % at which three times the spread lifts the margin off its 5 % floor (a noisy run hides a slow chip
behind a raised bar)."""


def peer_ratios(frame: pd.DataFrame, *, by: str = "rep") -> pd.DataFrame:
    """``frame`` (rep, device, seconds) with ``ratio``: seconds over the median of the *other* devices' in its
    repetition. Leaving the device out matters: with it in, a slow device is always the top value and lifts its
    own repetition's median, so a 10 % slower chip reads about 8.5 % among eight."""
    table = frame.pivot_table(index=by, columns="device", values="seconds", aggfunc="first")
    values = table.to_numpy(dtype=float)
    peers = np.empty_like(values)
    for column in range(values.shape[1]):
        others = np.delete(values, column, axis=1)
        with np.errstate(all="ignore"):
            peers[:, column] = (np.nanmedian(others, axis=1) if others.shape[1] and not np.isnan(others).all()
                                else np.nan)
    median = pd.DataFrame(peers, index=table.index, columns=table.columns).stack(future_stack=True)
    median = median.reindex(pd.MultiIndex.from_arrays([frame[by], frame["device"]])).to_numpy()
    return frame.assign(ratio=frame["seconds"].to_numpy() / median)


def _noise(ratios: pd.Series) -> float:
    values = ratios.to_numpy(dtype=float)
    if len(values) < 2:
        return float("inf")
    mad = float(np.median(np.abs(values - np.median(values)))) * 1.4826
    return 1.2533 * mad / np.sqrt(len(values))  # standard error of a median


def compare_peers(frame: pd.DataFrame, rate: str, *, floor: float = FLOOR) -> pd.DataFrame:
    """One row per device: median and p10 of ``rate``, ``slowness`` (median ratio, 1.0 = as its peers),
    ``margin`` it had to exceed, ``slow`` and ``sure`` (slow beyond its own noise); both None with fewer than
    ``MIN_PEERS`` devices: cannot tell."""
    ratios = peer_ratios(frame)
    comparable = frame["device"].nunique() >= MIN_PEERS
    groups = ratios.groupby("device")
    slowness = groups["ratio"].median()
    spread = float(np.median(np.abs(slowness - slowness.median()))) * 1.4826
    margin = max(floor, NOISE_FACTOR * spread)
    table = pd.DataFrame({f"{rate}_median": groups[rate].median(), f"{rate}_p10": groups[rate].quantile(0.10),
                          f"{rate}_max": groups[rate].max(), "slowness": slowness, "spread": spread, "margin": margin,
                          "noise": groups["ratio"].apply(_noise), "reps": groups.size()})
    table.index = table.index.astype(int)
    table.index.name = "device"
    excess = table["slowness"] - 1.0
    table["slow"] = (excess > margin) if comparable else None
    table["sure"] = (table["slow"].astype(bool) & (excess > OWN_NOISE_FACTOR * table["noise"])) if comparable else None
    return table


def unclear(table: pd.DataFrame) -> str | None:
    """Why ``compare_peers``' verdict deserves a second look, in words; None when it is clear-cut: too few devices to
    compare, or every chip either well inside its margin (under half of it) or slow beyond its own noise."""
    if table.empty or table["slow"].isna().any():
        return None
    spread = float(table["spread"].iloc[0])
    if spread > STEADY_SPREAD:
        return f"the chips scatter by {spread:.1%} (calm runs: under {STEADY_SPREAD:.1%})"
    excess = table["slowness"] - 1.0
    within_noise = table[table["slow"].astype(bool) & ~table["sure"].astype(bool)]
    if not within_noise.empty:
        return f"device {int(within_noise.index[0])} is slower than its peers but within its own noise"
    near = table[~table["slow"].astype(bool) & (excess > table["margin"] / 2)]
    if not near.empty:
        device = int(near.index[0])
        return f"device {device} is {excess[device]:+.1%}, near its {table['margin'].iloc[0]:.1%} margin"
    return None


def window_count(reps: int, most: int) -> int:
    """As many windows as give each at least three repetitions (a median), at most ``most``, at least three."""
    return max(3, min(most, reps // 3))


def soak_windows(frame: pd.DataFrame, windows: int) -> pd.DataFrame:
    """The soak's repetitions cut into ``windows`` by time; per (window, device): its median ratio to the peers
    of its repetitions and its median rate."""
    if frame.empty:
        return pd.DataFrame(columns=["window", "device", "slowness", "seconds"])
    span = max(float(frame["at_s"].max()), 1e-9)
    window = np.minimum((frame["at_s"] / span * windows).astype(int), windows - 1)
    ratios = peer_ratios(frame.assign(window=window))
    return ratios.groupby(["window", "device"]).agg(slowness=("ratio", "median"),
                                                    seconds=("seconds", "median")).reset_index()


def window_margins(windows: pd.DataFrame, *, floor: float = FLOOR) -> pd.Series:
    """Window -> the margin a chip must exceed in it: the floor, or three times the spread of all chips' slowness
    in that window (a median absolute deviation, so the one slow chip does not widen it)."""
    def margin(values: pd.Series) -> float:
        spread = float(np.median(np.abs(values - values.median()))) * 1.4826
        return max(floor, NOISE_FACTOR * spread)

    return windows.groupby("window")["slowness"].apply(margin)


def slowdown_onsets(windows: pd.DataFrame, *, consecutive: int = 2, floor: float = FLOOR) -> dict[int, int]:
    """Device -> the first window from which it stayed slower than its peers by more than the window's margin for
    ``consecutive`` windows running (the baseline is its peers, so a chip that degrades mid-run shows even when
    its best figure was fine)."""
    margins = window_margins(windows, floor=floor)
    onsets: dict[int, int] = {}
    for device, group in windows.groupby("device"):
        run = 0
        for window, slowness in zip(group["window"], group["slowness"], strict=True):
            run = run + 1 if slowness - 1.0 > float(margins[window]) else 0
            if run >= consecutive:
                onsets[int(device)] = int(window) - consecutive + 1
                break
    return onsets
