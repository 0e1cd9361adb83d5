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

from tpudoctor.profile.analysis.device_op_rows import device_ops
from tpudoctor.profile.analysis.events import host_rows, take
from tpudoctor.profile.analysis.grouping import CHUNK_ROWS, Coded
from tpudoctor.profile.analysis.intervals import union_ps
from tpudoctor.profile.analysis.nesting import outermost_rows

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
    ops = device_ops(host)
    device_total_ps = int(ops.self_ps.sum()) if not ops.empty else 0

    rows = []

    def add(names: Coded, times: np.ndarray, kind: str, where: str) -> None:
        if not len(times):
            return
        ids, labels = names.mapped(_short)
        add_counted(_by_label(ids, len(labels), times), labels, kind, where)

    def add_counted(counted, labels: np.ndarray, kind: str, where: str) -> None:
        order, counts, totals = counted
        for label, count, total in zip(labels[order], counts, totals, strict=True):
            if count:
                rows.append({"kind": kind, "name": label, "where": where, "count": int(count),
                             "total_ms": float(total) / 1e9})

    # Which device ops are which kind: decided per distinct name/category, as a mask over the ops (a big
    # TPU capture has millions of offload copies: no index or time arrays of them).
    names = ops.coded("name")
    category = ops.coded("hlo_category")
    # Infeed copies are input, counted by the input analysis, not host offload.
    offload = is_host_offload_copy(names) & ~category.isin({"infeed", "sparsecorev0 infeed"})
    outside = category.isin(OUTSIDE_COMPILATION_CATEGORIES) | ops.coded("tf_op").matches(
        r":Xla(?:SendToHost|RecvFromHost)$")
    del category
    dev_callbacks = np.flatnonzero(names.matches(CALLBACK))
    short_ids, short_labels = names.mapped(_short)
    del names
    for chosen, kind, times in ((offload, KIND_OFFLOAD, ops.self_ps), (outside, KIND_OUTSIDE, ops.self_ps)):
        add_counted(_by_label(short_ids, len(short_labels), times, chosen), short_labels, kind, "device")
    add_counted(_by_label(short_ids[dev_callbacks], len(short_labels), ops.duration_ps[dev_callbacks]), short_labels,
                KIND_CALLBACK, "device")
    del short_ids

    host_cb = outermost_rows(host, host_rows(host, r"^HostCallbackRequest$"))
    transfers = outermost_rows(host, host_rows(host, HOST_TRANSFER))
    eager = outermost_rows(host, host_rows(host, EAGER_OP))
    for chosen, kind in ((host_cb, KIND_CALLBACK), (transfers, KIND_TRANSFER), (eager, KIND_EAGER)):
        add(Coded.of(ev, "name", chosen), take(ev, "duration_ps", chosen), kind, "host")

    table = pd.DataFrame(rows, columns=["kind", "name", "where", "count", "total_ms"])
    device_rows = table["where"] == "device"
    table["share_percent"] = np.where(
        device_rows, 100 * table["total_ms"] * 1e9 / max(device_total_ps, 1),
        100 * table["total_ms"] * 1e9 / (window * 1.0))
    table["share_of"] = np.where(device_rows, "device time", "capture window")
    table = table.sort_values("total_ms", ascending=False, kind="stable").reset_index(drop=True)

    cb_s = np.concatenate([ops.start_ps[dev_callbacks], take(ev, "start_ps", host_cb)])
    cb_e = np.concatenate([ops.end_ps(dev_callbacks),
                           take(ev, "start_ps", host_cb) + take(ev, "duration_ps", host_cb)])
    tr_s = take(ev, "start_ps", transfers)
    tr_e = tr_s + take(ev, "duration_ps", transfers)
    offload_ps = int(np.sum(ops.self_ps, where=offload))
    outside_ps = int(np.sum(ops.self_ps, where=outside))
    return HostOps(
        table=table,
        device_busy_ms=device_total_ps / 1e9,
        host_offload_device_ms=offload_ps / 1e9,
        host_offload_share_of_device_percent=100 * offload_ps / max(device_total_ps, 1),
        outside_compilation_device_ms=outside_ps / 1e9,
        outside_compilation_share_of_device_percent=100 * outside_ps / max(device_total_ps, 1),
        callback_ms=union_ps(cb_s, cb_e) / 1e9,
        host_transfer_ms=union_ps(tr_s, tr_e) / 1e9,
        eager_ms=float(take(ev, "duration_ps", eager).sum()) / 1e9,
        callback_intervals=(cb_s, cb_e),
        transfer_intervals=(tr_s, tr_e),
    )


def is_host_offload_copy(names: Coded) -> np.ndarray:
    """Device ops (their coded names) that copy to or from host memory space S(5) (infeed excluded
    by the callers)."""
    return names.matches(HOST_OFFLOAD)


def _by_label(ids: np.ndarray, n: int, times: np.ndarray,
              chosen: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Label ids in order of their first row (as a group-by of the label texts with ``sort=False``),
    with the count and integer sum of ``times`` of each (ids -1, and rows not ``chosen``, left out).
    A chunk of rows at a time: numpy's bincount copies its input to int64/float64."""
    def kept(low: int) -> tuple[np.ndarray, np.ndarray]:
        chunk_ids = ids[low:low + CHUNK_ROWS]
        keep = chunk_ids >= 0
        if chosen is not None:
            keep &= chosen[low:low + CHUNK_ROWS]
        return keep, chunk_ids[keep]

    if chosen is not None and not chosen.any():  # nothing to count: every label empty, in label order
        return np.arange(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
    counts = np.zeros(n, np.int64)
    sums = np.zeros(n, np.float64)  # exact while every partial sum stays below 2**52 (whole numbers)
    first = np.full(n, len(ids), np.int64)
    exact = True
    for low in range(0, len(ids), CHUNK_ROWS):
        keep, chunk_ids = kept(low)
        chunk_times = np.asarray(times[low:low + CHUNK_ROWS], np.int64)[keep]
        counts += np.bincount(chunk_ids, minlength=n)
        if exact:
            sums += np.bincount(chunk_ids, weights=chunk_times, minlength=n)
            # times are never negative: the sums are their magnitudes
            exact = not len(chunk_times) or (chunk_times.min() >= 0 and sums.sum() < 2.0 ** 52)
        unseen = first[chunk_ids] == len(ids)  # each label's first row: only the rows of labels new here
        np.minimum.at(first, chunk_ids[unseen], (np.flatnonzero(keep) + low)[unseen])
    if exact:
        totals = sums.astype(np.int64)
    else:  # integer sums, row by row
        totals = np.zeros(n, np.int64)
        for low in range(0, len(ids), CHUNK_ROWS):
            keep, chunk_ids = kept(low)
            np.add.at(totals, chunk_ids, np.asarray(times[low:low + CHUNK_ROWS], np.int64)[keep])
    order = np.argsort(first, kind="stable")
    return order, counts[order], totals[order]


def _short(name: str) -> str:
    """HLO op events are named by their whole expression; keep the op name (``%copy-done.2``)."""
    if name.startswith("%") and " = " in name:
        return name.split(" = ", 1)[0].lstrip("%")
    return name
