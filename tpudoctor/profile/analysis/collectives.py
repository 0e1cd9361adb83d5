"""Collective ops of one host's capture, and the small per-step table that the cross-host combine needs.

A collective is an XLA op that exchanges data between devices or hosts: all-reduce, all-gather,
reduce-scatter, all-to-all, collective-permute/broadcast, send/recv (device to device, not the
host transfers of outside compilation), NCCL kernels on GPU, and Megascale (DCN) ops on TPU. On a
CPU capture the XLA CPU thunks carry the HLO name (``all-reduce``) in their ``hlo_op`` stat; gloo
runs inside that thunk, so its time is the collective's.

``host_collectives(host)`` is the per-host *map* result: a few rows per step, no events; it pickles
small and carries absolute times (nanoseconds since the Unix epoch), so the combine
(``tpudoctor.profile.analysis.cross_host``) needs nothing else from the capture.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.device_op_rows import DeviceOpRows, device_ops
from tpudoctor.profile.analysis.events import (
    column,
    end_ps,
    plane_lines,
    rows_frame,
    take,
)

COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                    "collective-broadcast", "send-recv", "megascale")
_OP = re.compile(
    r"^(?:nccl(?:devkernel|kernel)?[-_]?)?"
    r"(?P<op>all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|collective-?permute|collective-?broadcast"
    r"|send|recv)(?:-start|-done|-update)?(?:[.\-_:(]|$)")
_CANONICAL = {"allreduce": "all-reduce", "allgather": "all-gather", "reducescatter": "reduce-scatter",
              "alltoall": "all-to-all", "collectivepermute": "collective-permute",
              "collectivebroadcast": "collective-broadcast", "send": "send-recv", "recv": "send-recv"}
# TensorFlow collective op types ("allreduce/CollectiveReduce:CollectiveReduce") and NCCL kernels
# of any NCCL version ("ncclKernel_AllReduce_RING_LL_Sum_float", "ncclAllReduceRingLLKernel_sum_f32").
TF_COLLECTIVE_TYPES = {"collectivereduce": "all-reduce", "collectivereducev2": "all-reduce",
                       "collectivereducev3": "all-reduce", "ncclallreduce": "all-reduce",
                       "collectivegather": "all-gather", "collectivegatherv2": "all-gather",
                       "collectivebcastsend": "collective-broadcast", "collectivebcastrecv": "collective-broadcast",
                       "collectivebcastsendv2": "collective-broadcast", "collectivebcastrecvv2": "collective-broadcast",
                       "collectivealltoallv2": "all-to-all", "collectivealltoallv3": "all-to-all"}
NCCL_ANYWHERE = re.compile(r"^nccl.*?(?P<op>allreduce|allgather|reducescatter|alltoall|broadcast|sendrecv|send|recv)")
MEGASCALE = re.compile(r"megascale", re.IGNORECASE)
# Planes written by the Megascale (DCN) runtime next to the TPU planes.
MEGASCALE_PLANE = r"^/device:CUSTOM:Megascale"
HOST_TRANSFER_CATEGORY = re.compile(r"host (?:send|recv)", re.IGNORECASE)
EPOCH_NS_FLOOR = 10**15  # line timestamps below this (1970-01-12) are relative to the profile's start

STEP_COLUMNS = ["step_index", "step_num", "step_start_at_ns", "step_end_at_ns", "step_ns", "arrival_at_ns",
                "first_collective_ns", "collective_ns", "collective_count"]


def collective_kind(name: str) -> str | None:
    """The collective family of an op or HLO name (``"all-reduce.3"`` -> ``"all-reduce"``), else None."""
    text = name.strip().lstrip("%").split(" = ", 1)[0].lower().replace("_", "-")
    if MEGASCALE.search(text):
        return "megascale"
    if ":" in text:  # a TensorFlow op "scope/name:Type": only its type says what it is
        return TF_COLLECTIVE_TYPES.get(text.rsplit(":", 1)[-1].strip())
    found = _OP.match(text)
    if not found:
        nccl = NCCL_ANYWHERE.match(text.replace("-", ""))
        if not nccl:
            return None
        op = nccl.group("op")
        return {"broadcast": "collective-broadcast", "sendrecv": "send-recv"}.get(op, _CANONICAL.get(op, op))
    op = found.group("op")
    return _CANONICAL.get(op.replace("-", ""), op)


def collective_ops(ops: DeviceOpRows) -> pd.DataFrame:
    """The collectives among device op executions (``device_op_rows.device_ops``): ``core``, ``name``, ``kind``,
    ``start_ps``, ``end_ps``, ``duration_ps``. Host send/recv (outside compilation) are not collectives."""
    if ops.empty:
        return pd.DataFrame(columns=["core", "name", "kind", "start_ps", "end_ps", "duration_ps"])
    # The kind of each distinct hlo_op, name and category, taken at the ops: from the hlo_op where it
    # names a collective, else the name, else the category.
    kinds: dict[str, int] = {}
    kind = np.full(len(ops), -1, np.int16)  # a few kinds: small codes, filled in place
    category = ops.coded("hlo_category")
    for coded in (ops.coded("hlo_op"), ops.coded("name"), category):
        table = np.full(len(coded.labels) + 1, -1, np.int16)
        for code, label in enumerate(coded.labels):
            found = collective_kind(label)
            if found is not None:
                table[code] = kinds.setdefault(found, len(kinds))
        if (table >= 0).any():
            unknown = kind < 0
            kind[unknown] = table[coded.codes[unknown]]
            del unknown
        del coded
    keep = np.flatnonzero((kind >= 0) & ~category.matches(HOST_TRANSFER_CATEGORY.pattern))
    names = ops.events["name"].array.take(ops.rows[keep])
    return pd.DataFrame({
        "core": ops.core_names[ops.core[keep]],
        "name": pd.Series(names).astype(str).to_numpy(),
        "kind": np.array(list(kinds), dtype=object)[kind[keep]].astype(str),
        "start_ps": ops.start_ps[keep],
        "end_ps": ops.end_ps(keep),
        "duration_ps": ops.duration_ps[keep],
    })


def megascale_events(host) -> pd.DataFrame:
    """Events on a Megascale (DCN) plane, as collectives of kind ``megascale``."""
    ev = host.events
    rows = np.flatnonzero(host.on_lines(plane_lines(host, re.compile(MEGASCALE_PLANE).search)))
    rows = rows[take(ev, "duration_ps", rows) > 0]
    chosen = rows_frame(ev, rows, ["name", "start_ps", "duration_ps"])
    return pd.DataFrame({
        "core": pd.Series(host.line_values("plane_name", rows)).astype(str).to_numpy(), "name": chosen["name"].astype(str).to_numpy(),
        "kind": "megascale", "start_ps": chosen["start_ps"].to_numpy(np.int64), "end_ps": end_ps(chosen),
        "duration_ps": chosen["duration_ps"].to_numpy(np.int64),
    })


def clock_origin_ns(host) -> tuple[int, str]:
    """Nanoseconds since the Unix epoch at ``start_ps == 0``, and where that came from.

    Newer profilers write line timestamps relative to the profile's start and keep the start in the
    ``profile_start_time`` plane stat; older ones write absolute line timestamps."""
    origin = int(getattr(host, "time_origin_ns", 0) or 0)
    if origin >= EPOCH_NS_FLOOR:
        return origin, "line timestamps"
    for stats in getattr(host, "plane_stats", {}).values():
        start = stats.get("profile_start_time")
        if isinstance(start, (int, np.integer)) and start >= EPOCH_NS_FLOOR:
            return origin + int(start), "profile_start_time + line timestamps"
    return origin, "relative (no profile_start_time: hosts cannot be aligned in time)"


@dataclasses.dataclass
class HostCollectives:
    """One host's collectives: the small map result of the cross-host analysis (picklable, no events).

    ``per_step`` (one row per step, ``STEP_COLUMNS``): times ``*_at_ns`` are nanoseconds since the
    Unix epoch; ``arrival_at_ns`` is the start of the step's first collective (the latest over the
    host's cores: the host joins when its last core does), ``first_collective_ns`` that op's
    duration, ``collective_ns`` the time of all the step's collectives (mean over cores).
    ``by_kind``: ``kind``, ``count``, ``total_ms``. ``collective_percent``: collective time over step time.
    """

    host: str
    step_method: str
    per_step: pd.DataFrame
    by_kind: pd.DataFrame
    clock: str
    collective_percent: float = 0.0
    megascale: pd.DataFrame | None = None  # ``megascale_stats`` of the host's DCN send/recv, where there are any

    @property
    def has_collectives(self) -> bool:
        return bool(self.per_step["arrival_at_ns"].notna().any()) if not self.per_step.empty else False


def host_collectives(host, steps, name: str | None = None) -> HostCollectives:
    """The map step: ``host`` a ``HostProfile``, ``steps`` its ``StepSet`` (``steps.find_steps``)."""
    coll = collective_ops(device_ops(host))
    mega = megascale_events(host)
    if not mega.empty:
        coll = pd.concat([coll, mega], ignore_index=True)
    origin_ns, clock = clock_origin_ns(host)
    table = collectives_per_step(steps.steps, coll, origin_ns)
    by_kind = (coll.groupby("kind")["duration_ps"].agg(["count", "sum"]).reset_index()
               .rename(columns={"sum": "total_ps"}) if not coll.empty else
               pd.DataFrame(columns=["kind", "count", "total_ps"]))
    by_kind = pd.DataFrame({"kind": by_kind["kind"].astype(str), "count": by_kind["count"].astype(int),
                            "total_ms": by_kind["total_ps"].to_numpy(np.float64) / 1e9})
    step_total = float(table["step_ns"].sum()) if not table.empty else 0.0
    percent = 100 * float(table["collective_ns"].sum()) / step_total if step_total > 0 else 0.0
    dcn = coll[coll["kind"] == "send-recv"] if not coll.empty else coll
    return HostCollectives(name or getattr(host, "hostname", "host"), steps.method, table,
                           by_kind.sort_values("total_ms", ascending=False).reset_index(drop=True), clock, percent,
                           megascale_stats(dcn) if not dcn.empty else None)


def collectives_per_step(steps: pd.DataFrame, coll: pd.DataFrame, origin_ns: int = 0) -> pd.DataFrame:
    """Per step: its span, the arrival at its first collective and the time inside collectives.

    ``steps``: a ``StepSet.steps`` frame (one row per step and core); ``coll``: ``collective_ops``
    output. Steps found on the host (core ``host``) take the collectives of every core; per-core
    steps take their own core's. ``origin_ns`` turns capture picoseconds into epoch nanoseconds."""
    if steps.empty:
        return pd.DataFrame(columns=STEP_COLUMNS)
    spans = steps.groupby("step_index", sort=True).agg(step_num=("step_num", "first"), start_ps=("start_ps", "min"),
                                                       end_ps=("end_ps", "max"))
    out = pd.DataFrame({
        "step_index": spans.index.to_numpy(np.int64),
        "step_num": spans["step_num"].astype("Int64").to_numpy(),
        "step_start_at_ns": origin_ns + spans["start_ps"].to_numpy(np.int64) // 1000,
        "step_end_at_ns": origin_ns + spans["end_ps"].to_numpy(np.int64) // 1000,
    })
    out["step_ns"] = out["step_end_at_ns"] - out["step_start_at_ns"]
    arrival = np.full(len(out), -1, np.int64)  # -1: no collective in the step
    first_ns = np.full(len(out), np.nan)
    total_ns = np.zeros(len(out))
    count = np.zeros(len(out), np.int64)
    if not coll.empty:
        step_core = steps["core"].astype(str).to_numpy()
        per_core_steps = set(step_core) - {"host"}
        for core, ops in coll.groupby("core", sort=False):
            rows = steps if not per_core_steps else steps[step_core == core]
            if rows.empty:
                rows = steps  # a Megascale plane: it belongs to the host's steps, not to a core's
            core_spans = rows.groupby("step_index", sort=True).agg(start_ps=("start_ps", "min"), end_ps=("end_ps", "max"))
            starts, ends = core_spans["start_ps"].to_numpy(np.int64), core_spans["end_ps"].to_numpy(np.int64)
            ops = ops.sort_values("start_ps", kind="stable")
            op_start = ops["start_ps"].to_numpy(np.int64)
            slot = np.searchsorted(starts, op_start, side="right") - 1
            inside = (slot >= 0) & (op_start < ends[np.clip(slot, 0, None)])
            if not inside.any():
                continue
            step_pos = np.searchsorted(out["step_index"].to_numpy(), core_spans.index.to_numpy()[slot[inside]])
            op_start, op_dur = op_start[inside], ops["duration_ps"].to_numpy(np.int64)[inside]
            first = np.r_[True, step_pos[1:] != step_pos[:-1]]  # ops are sorted: first of each step
            core_arrival = origin_ns + op_start[first] // 1000
            target = step_pos[first]
            arrival[target] = np.maximum(arrival[target], core_arrival)
            first_ns[target] = np.fmax(first_ns[target], op_dur[first] / 1000)
            np.add.at(total_ns, step_pos, op_dur / 1000)
            np.add.at(count, step_pos, 1)
        n_cores = max(1, coll["core"].nunique())
        total_ns /= n_cores
        count = count // n_cores
    out["arrival_at_ns"] = pd.arrays.IntegerArray(arrival, arrival < 0)
    out["first_collective_ns"] = first_ns
    out["collective_ns"] = total_ns
    out["collective_count"] = count
    return out[STEP_COLUMNS]


DCN_OP = re.compile(r"^%?(?P<op>send-done|recv-done|send|recv)(?P<key>[.\-_]\d+)?")
MEGASCALE_COLUMNS = ["collective", "occurrence", "observed_us", "stall_us", "slack_us", "bytes",
                     "required_bandwidth_gbps"]


def megascale_stats(ops: pd.DataFrame) -> pd.DataFrame:
    """xprof's megascale_stats figures for DCN collectives made of send, send-done, recv, recv-done.

    ``ops``: ``name``, ``start_ps``, ``duration_ps`` and optionally ``bytes`` (bytes sent). The four
    ops of one collective are paired by the trailing number of their names (``send.7`` and
    ``send-done.7``), and the n-th run of each op forms the collective's n-th occurrence. Per
    occurrence: observed = send start to recv-done end; stall = time inside the four ops (the device
    waits there); slack = observed - stall (time the collective has to run behind other work);
    required bandwidth = bytes / slack (what the link must sustain to hide the transfer).
    Collectives without all four ops are left out."""
    if ops.empty:
        return pd.DataFrame(columns=MEGASCALE_COLUMNS)
    parsed = ops["name"].astype(str).str.extract(DCN_OP)
    frame = pd.DataFrame({"op": parsed["op"], "collective": parsed["key"].fillna("").str.lstrip(".-_"),
                          "start_ps": ops["start_ps"].to_numpy(np.int64),
                          "end_ps": ops["start_ps"].to_numpy(np.int64) + ops["duration_ps"].to_numpy(np.int64),
                          "duration_ps": ops["duration_ps"].to_numpy(np.int64),
                          "bytes": pd.to_numeric(column(ops, "bytes"), errors="coerce").to_numpy(np.float64)})
    frame = frame[frame["op"].notna()].sort_values("start_ps", kind="stable")
    if frame.empty:
        return pd.DataFrame(columns=MEGASCALE_COLUMNS)
    frame["occurrence"] = frame.groupby(["collective", "op"]).cumcount()
    wide = frame.pivot_table(index=["collective", "occurrence"], columns="op",
                             values=["start_ps", "end_ps", "duration_ps", "bytes"], aggfunc="first")
    needed = ["send", "send-done", "recv", "recv-done"]
    if not all(("start_ps", op) in wide.columns for op in needed):
        return pd.DataFrame(columns=MEGASCALE_COLUMNS)
    wide = wide.dropna(subset=[("start_ps", op) for op in needed])
    observed = wide[("end_ps", "recv-done")] - wide[("start_ps", "send")]
    stall = sum(wide[("duration_ps", op)] for op in needed)
    slack = (observed - stall).clip(lower=0)
    sent = wide[("bytes", "send")] if ("bytes", "send") in wide.columns else pd.Series(np.nan, index=wide.index)
    out = pd.DataFrame({
        "observed_us": observed.to_numpy(np.float64) / 1e6, "stall_us": stall.to_numpy(np.float64) / 1e6,
        "slack_us": slack.to_numpy(np.float64) / 1e6, "bytes": sent.to_numpy(np.float64),
    }, index=wide.index).reset_index()
    # bytes per microsecond of slack = MB/s; / 1e3 = GB/s
    out["required_bandwidth_gbps"] = np.where(out["slack_us"] > 0, out["bytes"] / out["slack_us"] / 1e3, np.nan)
    return out[MEGASCALE_COLUMNS]


# ``HostResult.tables`` names: the map result travels as plain records (JSON-ready, picklable).
PER_STEP_TABLE = "collectives_per_step"
BY_KIND_TABLE = "collectives_by_kind"
MEGASCALE_TABLE = "megascale_stats"
CLOCK_TABLE = "collectives_clock"


def to_tables(result: HostCollectives) -> dict[str, list[dict]]:
    """The map result as ``HostResult.tables`` records."""
    def plain(v):
        if v is None or v is pd.NA:
            return None
        if hasattr(v, "item"):
            v = v.item()
        return None if isinstance(v, float) and np.isnan(v) else v

    def column_values(series: pd.Series) -> list:
        if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iub":
            return series.to_numpy().tolist()  # Python ints and bools, never missing
        if isinstance(series.dtype, np.dtype) and series.dtype.kind == "f":
            return [None if v != v else v for v in series.to_numpy().tolist()]  # NaN: None
        return [plain(v) for v in series.astype(object).tolist()]

    def records(frame: pd.DataFrame | None) -> list[dict]:
        if frame is None or frame.empty:
            return []
        # column by column (a per-step table has a row per step: no frame of Python objects first)
        columns = {name: column_values(frame[name]) for name in frame.columns}
        return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]

    return {PER_STEP_TABLE: records(result.per_step), BY_KIND_TABLE: records(result.by_kind),
            MEGASCALE_TABLE: records(result.megascale),
            CLOCK_TABLE: [{"clock": result.clock, "step_method": result.step_method,
                           "collective_percent": float(result.collective_percent)}]}


def from_tables(host: str, tables: dict[str, list[dict]]) -> HostCollectives | None:
    """``to_tables``' inverse (None when the host result has no collective tables)."""
    if CLOCK_TABLE not in tables:
        return None
    meta = tables[CLOCK_TABLE][0]
    per_step = pd.DataFrame(tables.get(PER_STEP_TABLE) or [], columns=STEP_COLUMNS)
    for name in ("step_index", "step_num", "step_start_at_ns", "step_end_at_ns", "arrival_at_ns"):
        per_step[name] = pd.array(per_step[name].tolist(), dtype="Int64")
    for name in ("step_ns", "first_collective_ns", "collective_ns"):
        per_step[name] = pd.to_numeric(per_step[name], errors="coerce").astype(np.float64)
    per_step["collective_count"] = pd.to_numeric(per_step["collective_count"]).fillna(0).astype(np.int64)
    by_kind = pd.DataFrame(tables.get(BY_KIND_TABLE) or [], columns=["kind", "count", "total_ms"])
    megascale = pd.DataFrame(tables[MEGASCALE_TABLE]) if tables.get(MEGASCALE_TABLE) else None
    return HostCollectives(host, meta["step_method"], per_step, by_kind, meta["clock"],
                           float(meta["collective_percent"]), megascale)
