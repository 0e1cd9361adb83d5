"""The compiled programs (HLO modules) of one host, and what kind each device op is.

Every device op is one of ``OP_KINDS``:

* ``hlo-op``: an op of a compiled program: every op on a TPU ``XLA Ops`` line; on GPU and CPU an
  event that carries an ``hlo_op`` stat (xprof's hlo_stats counts exactly these);
* ``runtime-copy``: a copy or memset kernel the runtime launches itself, tied to no HLO op (ROCm's
  ``__amd_rocclr_copyBuffer``/``fillBuffer`` kernels, CUDA's ``MemcpyH2D``/``MemcpyD2H``/``Memset``
  activities, on a ``Stream #N(MemcpyH2D)`` line): moving a program's arguments and results, not
  running it. They belong to no program. One that an HLO op launches (a custom call zeroing its
  workspace: the kernel carries that op's ``hlo_op``) is part of that op's time, as xprof counts
  it. A TPU's host/device DMAs are not on its ``XLA Ops`` line (they are host events such as
  ``tpu::System::TransferToDevice``), so a TPU capture has none of these;
* ``other``: device work the capture ties to no HLO op (TensorFlow's own GPU kernels, executor ops
  on a CPU, a kernel whose ``hlo_op`` stat the runtime left out).

A program's device time is the self time of its HLO ops on every device (xprof's hlo_stats summed
by program id). ``program_table`` lists each program with its runs and device time: the content of
a micro-benchmark capture, and how pseudo-steps pick the program a training loop repeats.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from tpudoctor.captures.xspace.lookup import code_dtype
from tpudoctor.profile.analysis.device_op_rows import DeviceOpRows, device_ops
from tpudoctor.profile.analysis.events import device_kind, module_rows
from tpudoctor.profile.analysis.grouping import (
    CHUNK_ROWS,
    FACTORIZE_ROWS,
    Coded,
    Factorizer,
    Groups,
    float_total,
)

OP_KINDS = ("hlo-op", "runtime-copy", "other")
HLO_OP, RUNTIME_COPY, OTHER = 0, 1, 2
RUNTIME_COPY_KERNEL = re.compile(
    r"^(?:__amd_rocclr_(?:copy|fill)\w*(?:\.kd)?"  # ROCm's blit kernels: copyBuffer, copyBufferAligned, fillBuffer...
    r"|Memcpy(?:HtoD|DtoH|DtoD|HtoH|PtoP|H2D|D2H|D2D|P2P)?|Memset"  # CUDA copy/memset activities (CUPTI)
    r"|\[CUDA mem(?:cpy|set)[^\]]*\])$")  # Nsight's names for the same
RUNTIME_COPY_LINE = re.compile(r"\((?:Memcpy\w*|Memset\w*)\)$")  # "Stream #143(MemcpyH2D)"
MODULE_NAME = re.compile(r"^(?P<name>.*)\((?P<program_id>\d+)\)$")  # "jit_f(12190760917235803885)"
PROGRAM_COLUMNS = ["program", "program_id", "runs", "devices", "device_ms", "mean_ms", "share_percent"]


def op_kinds(ops: DeviceOpRows) -> np.ndarray:
    """Each op's kind, as an index into ``OP_KINDS`` (int8; made once per selection of ops)."""
    if "kinds" not in ops.memo:
        ops.memo["kinds"] = _op_kinds(ops)
    return ops.memo["kinds"]


def _op_kinds(ops: DeviceOpRows) -> np.ndarray:
    kinds = np.full(len(ops), OTHER, np.int8)
    if ops.empty:
        return kinds
    if device_kind(ops.host) == "tpu":
        kinds[:] = HLO_OP
    else:
        kinds[ops.coded("hlo_op").codes >= 0] = HLO_OP
    copies = ops.coded("name").matches(RUNTIME_COPY_KERNEL.pattern) | ops.coded("line_name").matches(
        RUNTIME_COPY_LINE.pattern)
    kinds[copies & (kinds != HLO_OP)] = RUNTIME_COPY
    return kinds


@dataclasses.dataclass
class OpPrograms:
    """Each op's program: ``codes`` (-1: none) into ``ids`` (program id as text, '' where unknown)
    and ``names`` (the module's name, with its id where two programs share a name)."""

    codes: np.ndarray
    ids: np.ndarray
    names: np.ndarray


def op_programs(ops: DeviceOpRows, kinds: np.ndarray | None = None) -> OpPrograms:
    """The program of every HLO op (runtime copies and other device work have none); made once per
    selection of ops where ``kinds`` are its ``op_kinds``."""
    if kinds is not None and kinds is not ops.memo.get("kinds"):
        return _op_programs(ops, kinds)
    if "programs" not in ops.memo:
        ops.memo["programs"] = _op_programs(ops, op_kinds(ops))
    return ops.memo["programs"]


def _op_programs(ops: DeviceOpRows, kinds: np.ndarray) -> OpPrograms:
    if ops.empty:
        return OpPrograms(np.zeros(0, np.int32), np.zeros(0, object), np.zeros(0, object))
    module = ops.coded("hlo_module")
    # one program per (id, module name): a GPU op may carry a module name without an id, a TPU op an id only
    width = len(module.labels) + 1
    codes, id_values = ops.factorized("program_id", "UInt64")
    pairs_seen = Factorizer()
    for low in range(0, len(ops), FACTORIZE_ROWS):  # a chunk of ops at a time: no temporary as long as all ops
        high = low + FACTORIZE_ROWS
        pair = codes[low:high].astype(np.int64)
        pair += 1
        pair *= width
        pair += module.codes[low:high]
        pair += 1
        chunk = pairs_seen.codes(pair)
        chunk[kinds[low:high] != HLO_OP] = -1
        codes[low:high] = chunk
    pairs = pairs_seen.uniques
    known = _module_names(ops.host)
    ids, names = [], []
    for value in pairs:
        id_code, module_code = divmod(int(value), width)
        pid = str(id_values[id_code - 1]) if id_code else ""
        name = str(module.labels[module_code - 1]) if module_code else ""
        ids.append(pid)
        names.append(name or known.get(pid) or (f"program {pid}" if pid else "unknown program"))
    shared = pd.Series(names, dtype=object).duplicated(keep=False).to_numpy()
    names = [f"{n}({pid})" if clash and pid else n for n, pid, clash in zip(names, ids, shared, strict=True)]
    # kept for every analysis: in the narrowest type that also holds a code per kind of op past the programs'
    codes = codes.astype(code_dtype(len(ids) + len(OP_KINDS) + 1))
    return OpPrograms(codes, np.array(ids, dtype=object), np.array(names, dtype=object))


def _module_names(host) -> dict[str, str]:
    """Program id -> module name, from the ``XLA Modules`` events (``jit_f(<program id>)``)."""
    rows = module_rows(host)
    out: dict[str, str] = {}
    for label in Coded.of(host.events, "name", rows).labels:
        found = MODULE_NAME.match(str(label))
        if found:
            out.setdefault(found.group("program_id"), found.group("name"))
    return out


def program_table(host, *, kinds: np.ndarray | None = None, programs: OpPrograms | None = None) -> pd.DataFrame:
    """One row per program (``PROGRAM_COLUMNS``), most device time first: ``runs`` (times it ran on
    one device, the most over devices), ``devices`` (how many ran it), ``device_ms`` (its HLO ops'
    self time on all devices), ``mean_ms`` (per run on one device) and ``share_percent`` (of all HLO
    op time). ``kinds``/``programs``: the ops' ``op_kinds``/``op_programs`` where already made."""
    ops = device_ops(host)
    kinds = op_kinds(ops) if kinds is None else kinds
    programs = op_programs(ops, kinds) if programs is None else programs
    has = programs.codes >= 0
    if not has.any():
        return pd.DataFrame(columns=PROGRAM_COLUMNS)
    rows = None if has.all() else np.flatnonzero(has)  # every op of a TPU is of a program: no copies then
    del has
    code = programs.codes if rows is None else programs.codes[rows]
    self_ps = ops.self_ps if rows is None else ops.self_ps[rows]
    total_ps = max(float_total(self_ps) if rows is not None else ops.self_total_ps(), 1.0)
    by_program = Groups(code)
    program_of_group = code[by_program.first_row]
    device_ps = by_program.sums(self_ps)
    runs_per_core = _runs_per_core(host, ops, programs, rows)
    records = []
    for group, program in enumerate(program_of_group):
        runs = runs_per_core.get(int(program), {})
        executions = sum(runs.values())
        records.append({
            "program": str(programs.names[program]), "program_id": str(programs.ids[program]),
            "runs": max(runs.values(), default=0), "devices": len(runs), "device_ms": device_ps[group] / 1e9,
            "mean_ms": device_ps[group] / 1e9 / executions if executions else None,
            "share_percent": 100 * device_ps[group] / total_ps,
        })
    table = pd.DataFrame.from_records(records, columns=PROGRAM_COLUMNS)
    return table.sort_values(["device_ms", "program"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _runs_per_core(host, ops: DeviceOpRows, programs: OpPrograms, rows: np.ndarray | None) -> dict:
    """Program code -> {core code: runs}. TPU: the program's ``XLA Modules`` events on that core.
    Elsewhere: the fewest executions of any one of its ops on that core (an op runs at least once
    per run; one HLO op may launch several kernels, and ops in a loop body run more often).
    ``rows``: the positions of the ops of a program (None: all)."""
    out: dict[int, dict[int, int]] = {}
    if device_kind(host) == "tpu":
        module_runs = _module_runs(host)
        if module_runs:
            for program, on_cores in _cores_of_programs(programs.codes, ops.core, rows).items():
                pid = str(programs.ids[program])
                out[program] = {c: module_runs.get((str(ops.core_names[c]), pid), 0) for c in on_cores}
            return out
    code = programs.codes if rows is None else programs.codes[rows]
    core = (ops.core if rows is None else ops.core[rows]).astype(np.int64)
    name_ids, _ = ops.coded("hlo_op").mapped(str)
    name_ids = name_ids if rows is None else name_ids[rows]
    ok = name_ids >= 0
    groups = Groups(code[ok], core[ok], name_ids[ok])
    first = np.flatnonzero(ok)[groups.first_row]
    for program, c, count in zip(code[first], core[first], groups.counts(), strict=True):
        runs = out.setdefault(int(program), {})
        runs[int(c)] = min(runs.get(int(c), int(count)), int(count))
    return out


def _cores_of_programs(codes: np.ndarray, core: np.ndarray, rows: np.ndarray | None) -> dict[int, list[int]]:
    """Program code -> the cores that ran its ops (both ascending), from a table of (program, core)
    pairs filled a chunk of ops at a time."""
    n_programs = int(codes.max()) + 1 if len(codes) else 0
    n_cores = int(core.max()) + 1 if len(core) else 0
    seen = np.zeros(n_programs * n_cores, bool)
    n = len(codes) if rows is None else len(rows)
    for low in range(0, n, CHUNK_ROWS):
        at = slice(low, low + CHUNK_ROWS) if rows is None else rows[low:low + CHUNK_ROWS]
        code = codes[at].astype(np.int64)
        keep = code >= 0
        seen[code[keep] * n_cores + core[at][keep]] = True
    pairs = np.flatnonzero(seen)
    out: dict[int, list[int]] = {}
    for program, core_code in zip((pairs // max(n_cores, 1)).tolist(), (pairs % max(n_cores, 1)).tolist(), strict=True):
        out.setdefault(program, []).append(core_code)
    return out


def _module_runs(host) -> dict[tuple[str, str], int]:
    """(core, program id) -> how many ``XLA Modules`` events the core has of that program."""
    rows = module_rows(host)
    if not len(rows):
        return {}
    names = Coded.of(host.events, "name", rows)
    planes = Coded.of_stat(host, "plane_name", rows)
    groups = Groups(np.where(names.codes >= 0, names.codes, 0), np.where(planes.codes >= 0, planes.codes, 0))
    first = groups.first_row
    out: dict[tuple[str, str], int] = {}
    for name, plane, count in zip(names.codes[first], planes.codes[first], groups.counts(), strict=True):
        found = MODULE_NAME.match(str(names.labels[name])) if name >= 0 else None
        if found:
            key = (str(planes.labels[plane]), found.group("program_id"))
            out[key] = out.get(key, 0) + int(count)
    return out


def kind_totals_ms(ops: DeviceOpRows, kinds: np.ndarray) -> dict[str, float]:
    """Self time of each kind of device op, all devices: ``hlo_op_ms``, ``runtime_copy_ms``, ``other_ms``."""
    totals = {}
    for code, kind in enumerate(OP_KINDS):
        of_kind = kinds == code
        if of_kind.all():  # all ops of a TPU are HLO ops: no copy
            totals[f"{kind.replace('-', '_')}_ms"] = ops.self_total_ps() / 1e9
            continue
        values = ops.self_ps[of_kind]
        del of_kind
        totals[f"{kind.replace('-', '_')}_ms"] = float_total(values) / 1e9
    return totals


def program_key(name: str) -> str:
    """A function or module name reduced to what both spell alike: ``jit_train_step`` and
    ``PjitFunction(train_step)``'s ``train_step``, ``jit__lambda`` and ``<lambda>``."""
    name = re.sub(r"^(?:jit|pjit|pmap|xla_pmap)_(?=.)", "", MODULE_NAME.sub(r"\g<name>", name))
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")


def device_ms_by_key(table: pd.DataFrame) -> dict[str, float]:
    """``program_key`` -> device time of the programs of that name (recompiled variants summed)."""
    out: dict[str, float] = {}
    for program, device_ms in zip(table["program"], table["device_ms"], strict=True):
        key = program_key(str(program))
        out[key] = out.get(key, 0.0) + float(device_ms)
    return out

