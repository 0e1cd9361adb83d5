"""The history gate: is a candidate profile report a regression against the last N reports?

Robust statistics, so one odd run in the history cannot move the bar: for each KPI the history's
median and MAD (median absolute deviation) give a robust z of the candidate,

    z = (candidate - median) / (1.4826 * MAD)      (1.4826 * MAD estimates sigma for normal noise)

signed so that positive is worse. A regression needs both, as the bench gate needs both a
significant and a practical change (tpudoctor.bench.gate):

* z beyond ``Z_THRESHOLD`` (3.5: Iglewicz and Hoaglin's outlier bound for this modified z), and
* a change beyond ``MIN_CHANGE_PERCENT`` of the median (or ``MIN_CHANGE_POINTS`` for KPIs that
  are themselves percentages), so a very quiet history does not turn 0.5 % into a failure.

Reports are the JSON documents of ``tpudoctor profile analyze --format json`` (their ``kpis``),
read from a folder or a ``gs://bucket/prefix`` by ``read_history``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tpudoctor import locations

MAD_TO_SIGMA = 1.4826
Z_THRESHOLD = 3.5
MIN_CHANGE_PERCENT = 5.0
MIN_CHANGE_POINTS = 2.0
MIN_HISTORY = 5
DEFAULT_LAST_N = 20
# A MAD of zero (identical history) would make any change infinitely significant: the noise scale
# is at least this share of the median (or these points).
NOISE_FLOOR_PERCENT = 0.5
NOISE_FLOOR_POINTS = 0.1
MAX_REPORT_BYTES = 64 * 1024 * 1024
HISTORY_HINT = "history reports are written by: tpudoctor profile analyze CAPTURE --format json"
MAX_LISTED = 10_000

# kpi -> (lower is better, measured in percentage points)
HISTORY_KPIS: dict[str, tuple[bool, bool]] = {
    "step_time_median_ms": (True, False),
    "step_time_mean_ms": (True, False),
    "input_percent": (True, True),
    "idle_percent": (True, True),
    "compute_percent": (False, True),
    "compile_ms": (True, False),
}
GATED_KPIS = ("step_time_median_ms", "step_time_mean_ms", "input_percent", "idle_percent")


@dataclasses.dataclass(frozen=True)
class KpiJudgement:
    kpi: str
    lower_is_better: bool
    in_points: bool
    """The KPI is a percentage: changes are in percentage points."""
    gated: bool
    verdict: str
    """"regression", "improvement", "no_change" or "not_judged"."""
    reason: str
    n_history: int
    history_median: float | None = None
    history_mad: float | None = None
    noise_scale: float | None = None
    """The sigma estimate used: 1.4826 * MAD, or the noise floor."""
    candidate: float | None = None
    change: float | None = None
    """candidate - median, in the KPI's unit."""
    change_percent: float | None = None
    robust_z: float | None = None
    """Positive: worse than the history."""


@dataclasses.dataclass(frozen=True)
class HistoryGate:
    verdict: str
    """"regression", "no_change" or "not_judged" (too little history for every gated KPI)."""
    regressed_by: tuple[str, ...]
    kpis: tuple[KpiJudgement, ...]
    n_history: int
    last_n: int
    z_threshold: float
    min_change_percent: float
    min_change_points: float
    history_names: tuple[str, ...] = ()

    @property
    def regressed(self) -> bool:
        return self.verdict == "regression"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class HistoryEntry:
    name: str
    """Where the report came from (path or gs:// URI)."""
    updated: float
    """Modification time, seconds since the epoch: the history's order."""
    document: dict[str, Any]


def robust_z(values: Sequence[float], candidate: float, *, lower_is_better: bool = True,
             in_points: bool = False) -> tuple[float, float, float, float]:
    """(median, MAD, noise scale, z) of ``candidate`` against ``values``; z > 0 is worse."""
    history = np.asarray(values, dtype=np.float64)
    median = float(np.median(history))
    mad = float(np.median(np.abs(history - median)))
    floor = NOISE_FLOOR_POINTS if in_points else abs(median) * NOISE_FLOOR_PERCENT / 100
    scale = max(MAD_TO_SIGMA * mad, floor, 1e-12)
    z = (candidate - median) / scale
    return median, mad, scale, (z if lower_is_better else -z)


def judge_history(history: Sequence[Mapping[str, Any]], candidate: Mapping[str, Any], *,
                  last_n: int = DEFAULT_LAST_N, z_threshold: float = Z_THRESHOLD,
                  min_change_percent: float = MIN_CHANGE_PERCENT, min_change_points: float = MIN_CHANGE_POINTS,
                  gated: Sequence[str] = GATED_KPIS, min_history: int = MIN_HISTORY,
                  history_names: Sequence[str] = ()) -> HistoryGate:
    """Judge ``candidate``'s KPIs against the last ``last_n`` of ``history`` (report documents, oldest first)."""
    if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 1:
        raise ValueError(f"last_n must be a positive whole number, not {last_n!r}")
    for name, value in (("z_threshold", z_threshold), ("min_change_percent", min_change_percent),
                        ("min_change_points", min_change_points)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite, non-negative number, not {value!r}")
    recent = list(history)[-last_n:]
    judgements = []
    for kpi, (lower_better, in_points) in HISTORY_KPIS.items():
        values = [v for v in (_kpi(doc, kpi) for doc in recent) if v is not None]
        judgements.append(_judge(kpi, values, _kpi(candidate, kpi), lower_better=lower_better, in_points=in_points,
                                 gated=kpi in gated, z_threshold=z_threshold, min_change_percent=min_change_percent,
                                 min_change_points=min_change_points, min_history=min_history))
    regressed_by = tuple(j.kpi for j in judgements if j.gated and j.verdict == "regression")
    judged = any(j.gated and j.verdict != "not_judged" for j in judgements)
    verdict = "regression" if regressed_by else ("no_change" if judged else "not_judged")
    return HistoryGate(verdict=verdict, regressed_by=regressed_by, kpis=tuple(judgements), n_history=len(recent),
                       last_n=last_n, z_threshold=z_threshold, min_change_percent=min_change_percent,
                       min_change_points=min_change_points, history_names=tuple(history_names)[-last_n:])


def _judge(kpi: str, values: list[float], candidate: float | None, *, lower_better: bool, in_points: bool,
           gated: bool, z_threshold: float, min_change_percent: float, min_change_points: float,
           min_history: int) -> KpiJudgement:
    base: dict[str, Any] = {"kpi": kpi, "lower_is_better": lower_better, "in_points": in_points, "gated": gated,
            "n_history": len(values)}
    if candidate is None:
        return KpiJudgement(**base, verdict="not_judged", reason="the candidate report has no value for it")
    if len(values) < min_history:
        return KpiJudgement(**base, candidate=candidate, verdict="not_judged",
                            reason=f"{len(values)} past report(s) carry it; at least {min_history} are needed")
    median, mad, scale, z = robust_z(values, candidate, lower_is_better=lower_better, in_points=in_points)
    change = candidate - median
    change_percent = 100 * change / abs(median) if median else None
    worse_by = change if lower_better else -change
    if in_points:
        practical = abs(change) > min_change_points
        limit = f"{min_change_points:g} points"
    else:
        practical = change_percent is not None and abs(change_percent) > min_change_percent
        limit = f"{min_change_percent:g}%"
    significant = abs(z) > z_threshold
    if significant and practical:
        verdict = "regression" if worse_by > 0 else "improvement"
    else:
        verdict = "no_change"
    shown = f"{change_percent:+.1f}%" if change_percent is not None and not in_points else f"{change:+.2f} points"
    reason = (f"{candidate:.4g} vs median {median:.4g} of {len(values)} (MAD {mad:.3g}): {shown}, robust z "
              f"{z:+.1f} (significant beyond {z_threshold:g}: {'yes' if significant else 'no'}; practical beyond "
              f"{limit}: {'yes' if practical else 'no'})")
    return KpiJudgement(**base, verdict=verdict, reason=reason, history_median=median, history_mad=mad,
                        noise_scale=scale, candidate=candidate, change=change, change_percent=change_percent,
                        robust_z=z)


def _kpi(document: Mapping[str, Any], kpi: str) -> float | None:
    value = (document.get("kpis") or {}).get(kpi) if isinstance(document, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


# --------------------------------------------------------------------------- reading a history

def read_history(location: str, *, last_n: int = DEFAULT_LAST_N, exclude: Sequence[str] = (),
                 session=None) -> list[HistoryEntry]:
    """The last ``last_n`` profile reports (``*.json``) directly under a folder or ``gs://bucket/prefix``,
    oldest first (by modification time, then name), leaving out ``exclude`` (e.g. the candidate
    itself when it was already written there). A file that is not a report is an ``InputError``.
    ``session``: the run's Google Cloud session (``tpudoctor.locations``)."""
    if last_n < 1:
        raise ValueError("last_n must be at least 1")
    found = locations.list_files(location, suffix=".json", limit=MAX_LISTED, session=session,
                                 what="history folder", missing_hint="pass the folder that holds earlier "
                                 "`tpudoctor profile analyze --format json` reports")
    left_out = {_same(name) for name in exclude}
    entries = [(e.location, e.updated_s or 0.0) for e in found if _same(e.location) not in left_out]
    entries.sort(key=lambda item: (item[1], item[0]))
    return [HistoryEntry(name, updated, _read(name, session)) for name, updated in entries[-last_n:]]


def _same(name: str) -> str:
    return name if locations.is_gcs(name) else str(Path(name).resolve())


def _read(name: str, session) -> dict[str, Any]:
    from tpudoctor.profile.document import DOCUMENT_KIND, SCHEMA_VERSION
    from tpudoctor.report_file import parse_document, read_document

    kind: dict[str, Any] = {"what": "profile report", "schema": "profile_diagnosis", "schema_version": SCHEMA_VERSION,
            "max_bytes": MAX_REPORT_BYTES, "hint": HISTORY_HINT, "kind": DOCUMENT_KIND,
            "reads": "--history reads profile reports only: keep other reports out of that folder"}
    if locations.is_gcs(name):
        return parse_document(locations.read_bytes(name, session=session), name, **kind)
    return read_document(name, **kind)
