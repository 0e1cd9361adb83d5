"""Host-side work that slows a device: transfers, host offload, callbacks, outside compilation, eager ops.

xprof's rules carried over: outside compilation = device op whose framework op ends with
``:XlaSendToHost``/``:XlaRecvFromHost`` or a host send/recv HLO category (flagged above 5 % of device
time); host offload = copy-start/copy-done to host memory space ``S(5)``; callbacks =
``pure_callback``/``io_callback``/``debug_print`` custom calls and ``HostCallbackRequest``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.events import (
    HOST_PLANE,
    column,
    device_ops,
    mask,
    name_matches,
    outermost,
    per_name,
    text_in,
    union_ps,
)

HOST_TRANSFER = (r"^(?:tpu::System::TransferToDevice|tpu::System::TransferFromDevice|H2D Dispatch|D2H Dispatch|"
                 r"MapDmaBuffer|DevicePut|DevicePutWithSharding|np\.asarray\(jax\.Array\)|"
                 r"ArrayImpl\.copy_to_host_async|TransferH2DRequest|TransferPreprocessedH2DRequest|"
                 r"TransferD2HRequest|PCIe/Memcpy Dispatch|XlaLinearize|XlaDelinearize|"
                 r"TfrtTpuClient::BufferFromHostBuffer.*|TfrtTpuBuffer::CopyToMemoryViaPcieOrMemcpy|"
                 r"EagerCopyToDevice|MemcpyHToD|MemcpyDToH)$")
CALLBACK = r"^(?:pure_callback|io_callback|debug_print|debug_callback|callback|HostCallbackRequest|xla_python_cpu_callback|xla_ffi_python_cpu_callback)(?:[.\d]*)$"
HOST_OFFLOAD = r"^%?copy-(?:start|done)[.\d]*\b.*S\(5\)"
OUTSIDE_COMPILATION_CATEGORIES = {"host send", "host send-done", "host recv", "host recv-done"}
EAGER_OP = r"^EagerLocalExecute: (?!__inference_|IteratorGetNext)"

KIND_TRANSFER = "host-transfer"
KIND_CALLBACK = "host-callback"
KIND_OFFLOAD = "host-offload-copy"
KIND_OUTSIDE = "outside-compilation"
KIND_EAGER = "eager-op"


@dataclasses.dataclass
class HostOps:
    """``table``: one row per (kind, name): ``kind``, ``name``, ``where`` (host/device), ``count``,
    ``total_ms``, ``share_of_capture_percent`` (host rows) or ``share_of_device_time_percent``
    (device rows). ``*_ms`` totals per kind; ``*_share_percent`` against the capture window / device time.
    ``callback_intervals``, ``transfer_intervals``: (start_ps, end_ps) arrays for step attribution."""

    table: pd.DataFrame
    device_busy_ms: float
    host_offload_device_ms: float
    host_offload_share_of_device_percent: float
    outside_compilation_device_ms: float
    outside_compilation_share_of_device_percent: float
    callback_ms: float
    host_transfer_ms: float
    eager_ms: float
    callback_intervals: tuple[np.ndarray, np.ndarray]
    transfer_intervals: tuple[np.ndarray, np.ndarray]


def analyze_host_ops(host, window_ps: tuple[int, int]) -> HostOps:
    ev = host.events
    window = max(window_ps[1] - window_ps[0], 1)
    on_host = mask(ev["plane_name"] == HOST_PLANE)
    ops = device_ops(host)
    device_total_ps = int(ops["self_ps"].sum()) if not ops.empty else 0
    n_cores = max(ops["core"].nunique(), 1) if not ops.empty else 1

    rows = []

    def add(frame: pd.DataFrame, kind: str, where: str, time_col: str = "duration_ps") -> None:
        if frame.empty:
            return
        g = frame.groupby(per_name(frame["name"], _short), sort=False)[time_col].agg(["size", "sum"])
        for name, (count, total) in g.iterrows():
            rows.append({"kind": kind, "name": name, "where": where, "count": int(count),
                         "total_ms": float(total) / 1e9})

    cat = column(ops, "hlo_category")
    # Infeed copies are input, counted by the input analysis, not host offload.
    offload = ops[is_host_offload_copy(ops) & ~text_in(cat, {"infeed", "sparsecorev0 infeed"})] \
        if not ops.empty else ops
    outside = ops[text_in(cat, OUTSIDE_COMPILATION_CATEGORIES) |
                  name_matches(ops, r":Xla(?:SendToHost|RecvFromHost)$", col="tf_op")] if not ops.empty else ops
    dev_callbacks = ops[name_matches(ops, CALLBACK)] if not ops.empty else ops
    add(offload, KIND_OFFLOAD, "device", "self_ps")
    add(outside, KIND_OUTSIDE, "device", "self_ps")
    add(dev_callbacks, KIND_CALLBACK, "device", "duration_ps")

    host_cb = outermost(ev[on_host & name_matches(ev, r"^HostCallbackRequest$")])
    add(host_cb, KIND_CALLBACK, "host")
    transfers = outermost(ev[on_host & name_matches(ev, HOST_TRANSFER)])
    add(transfers, KIND_TRANSFER, "host")
    eager = outermost(ev[on_host & name_matches(ev, EAGER_OP)])
    add(eager, KIND_EAGER, "host")

    table = pd.DataFrame(rows, columns=["kind", "name", "where", "count", "total_ms"])
    device_rows = table["where"] == "device"
    table["share_percent"] = np.where(
        device_rows, 100 * table["total_ms"] * 1e9 / max(device_total_ps, 1),
        100 * table["total_ms"] * 1e9 / (window * 1.0))
    table["share_of"] = np.where(device_rows, "device time", "capture window")
    table = table.sort_values("total_ms", ascending=False, kind="stable").reset_index(drop=True)

    cb_frames = [f for f in (dev_callbacks, host_cb) if not f.empty]
    cb_s = np.concatenate([f["start_ps"].to_numpy(np.int64) for f in cb_frames]) if cb_frames else np.array([], np.int64)
    cb_e = np.concatenate([(f["start_ps"] + f["duration_ps"]).to_numpy(np.int64) for f in cb_frames]) \
        if cb_frames else np.array([], np.int64)
    tr_s = transfers["start_ps"].to_numpy(np.int64)
    tr_e = tr_s + transfers["duration_ps"].to_numpy(np.int64)
    offload_ps = int(offload["self_ps"].sum()) if not offload.empty else 0
    outside_ps = int(outside["self_ps"].sum()) if not outside.empty else 0
    return HostOps(
        table=table,
        device_busy_ms=device_total_ps / 1e9,
        host_offload_device_ms=offload_ps / 1e9,
        host_offload_share_of_device_percent=100 * offload_ps / max(device_total_ps, 1),
        outside_compilation_device_ms=outside_ps / 1e9,
        outside_compilation_share_of_device_percent=100 * outside_ps / max(device_total_ps, 1),
        callback_ms=union_ps(cb_s, cb_e) / 1e9,
        host_transfer_ms=union_ps(tr_s, tr_e) / 1e9,
        eager_ms=float(eager["duration_ps"].sum()) / 1e9 if not eager.empty else 0.0,
        callback_intervals=(cb_s, cb_e),
        transfer_intervals=(tr_s, tr_e),
    ) if n_cores else None


def is_host_offload_copy(ops: pd.DataFrame) -> np.ndarray:
    """Device ops that copy to or from host memory space S(5) (infeed excluded by the callers)."""
    return name_matches(ops, HOST_OFFLOAD) if not ops.empty else np.zeros(0, bool)


def _short(name: str) -> str:
    """HLO op events are named by their whole expression; keep the op name (``%copy-done.2``)."""
    if name.startswith("%") and " = " in name:
        return name.split(" = ", 1)[0].lstrip("%")
    return name
