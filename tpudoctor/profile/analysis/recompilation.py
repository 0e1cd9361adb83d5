"""Compilations inside the capture window, per function.

JAX: ``backend_compile`` / ``backend_compile_and_load`` (renamed in 2025) under
``PjitFunction(<fn>)`` on the same host thread; the runtime's ``TfrtTpuCompiler::Compile`` /
``PjRt*Client::Compile`` where no JAX frame wraps them. TensorFlow: ``tf.function-graph_building``
under the tf.function call event (which carries ``tf_function_call=traced-*``), and
``TPUCompile``/``_TPUCompileMlir``/``XlaCompile`` ops. Programs listed in ``/host:metadata`` that were
compiled before the window are not recompilations: only compile events in the file count.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd

from tpudoctor.profile.analysis.events import (
    HOST_PLANE,
    host_rows,
    mask,
    module_rows,
    name_matches,
    plane_lines,
    take,
)
from tpudoctor.profile.analysis.grouping import Coded
from tpudoctor.profile.analysis.nesting import outermost_rows

JAX_COMPILE = r"^backend_compile(?:_and_load)?$"
RUNTIME_COMPILE = r"^(?:TfrtTpuCompiler::Compile|PjRt\w*Client::Compile)$"
TF_GRAPH_BUILDING = r"^tf\.function-graph_building$"
TF_COMPILE_OPS = r"(?:^|:)(?:TPUCompile|_TPUCompileMlir|XlaCompile|_XlaCompile)$"
PJIT = re.compile(r"^PjitFunction\((?P<fn>.*)\)$")
CACHE_MISS = r"^LoadProgramCacheMiss$"


@dataclasses.dataclass
class Recompilation:
    """``functions``: one row per function: ``function``, ``framework``, ``compile_count``,
    ``compile_ms``, ``share_of_capture_percent``, ``first_compile_ms`` (from the window start),
    ``program_variants`` (distinct program ids seen executing, where the capture has them).
    ``intervals``: the compile events (``start_ps``, ``end_ps``, ``function``) for step attribution."""

    functions: pd.DataFrame
    intervals: pd.DataFrame
    total_compile_count: int
    total_compile_ms: float
    share_of_capture_percent: float
    program_cache_misses: int
    programs_in_metadata: int
    tf_tracing_count_max: int | None


def analyze_recompilation(host, window_ps: tuple[int, int]) -> Recompilation:
    ev = host.events
    rows: list[pd.DataFrame] = []

    jax_compiles = outermost_rows(host, host_rows(host, JAX_COMPILE))
    if len(jax_compiles):
        fn = _enclosing_names(host, jax_compiles, host_rows(host, PJIT.pattern))
        fn = [PJIT.match(p).group("fn") if p else "(outside jit)" for p in fn]
        rows.append(_frame(ev, jax_compiles, fn, "jax"))
    else:
        runtime = outermost_rows(host, host_rows(host, RUNTIME_COMPILE))
        if len(runtime):
            rows.append(_frame(ev, runtime, ["(runtime compile)"] * len(runtime), "xla"))

    graphs = outermost_rows(host, host_rows(host, TF_GRAPH_BUILDING))
    if len(graphs):
        calls = np.flatnonzero(host.on_lines(plane_lines(host, HOST_PLANE.__eq__)) & ev["tf_function_call"].notna()
                               .to_numpy()) if "tf_function_call" in ev.columns else np.zeros(0, np.int64)
        fn = _enclosing_names(host, graphs, calls)
        rows.append(_frame(ev, graphs, [p or "(tf.function)" for p in fn], "tensorflow"))
    tf_ops = host_rows(host, TF_COMPILE_OPS)
    if len(tf_ops):
        names = pd.Series(ev["name"].array.take(tf_ops)).astype(str).str.split(":").str[0].tolist()
        rows.append(_frame(ev, tf_ops, names, "tensorflow-xla"))

    intervals = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["function", "framework", "start_ps", "end_ps", "duration_ps"])
    window = max(window_ps[1] - window_ps[0], 1)
    if intervals.empty:
        functions = pd.DataFrame(columns=["function", "framework", "compile_count", "compile_ms",
                                          "share_of_capture_percent", "first_compile_ms", "program_variants"])
    else:
        g = intervals.groupby(["function", "framework"], sort=False)
        functions = g.agg(compile_count=("duration_ps", "size"), compile_ps=("duration_ps", "sum"),
                          first_ps=("start_ps", "min")).reset_index()
        functions["compile_ms"] = functions.pop("compile_ps") / 1e9
        functions["share_of_capture_percent"] = 100 * functions["compile_ms"] * 1e9 / window
        functions["first_compile_ms"] = (functions.pop("first_ps") - window_ps[0]) / 1e9
        variants = _program_variants(host)
        functions["program_variants"] = [variants.get(f"jit_{f}", variants.get(f)) for f in functions["function"]]
        functions = functions.sort_values("compile_ms", ascending=False, kind="stable").reset_index(drop=True)

    from tpudoctor.profile.analysis.intervals import union_ps

    total_ps = union_ps(intervals["start_ps"].to_numpy(np.int64), intervals["end_ps"].to_numpy(np.int64)) \
        if not intervals.empty else 0
    tracing = ev["tracing_count"] if "tracing_count" in ev.columns else pd.Series([], dtype="Int64")
    return Recompilation(
        functions=functions,
        intervals=intervals,
        total_compile_count=int(functions["compile_count"].sum()) if not functions.empty else 0,
        total_compile_ms=total_ps / 1e9,
        share_of_capture_percent=100 * total_ps / window,
        program_cache_misses=int(name_matches(ev, CACHE_MISS).sum()),
        programs_in_metadata=_metadata_programs(host),
        tf_tracing_count_max=int(tracing.max()) if tracing.notna().any() else None,
    )


def _frame(ev: pd.DataFrame, rows: np.ndarray, functions: list[str], framework: str) -> pd.DataFrame:
    starts = take(ev, "start_ps", rows)
    durations = take(ev, "duration_ps", rows)
    return pd.DataFrame({"function": functions, "framework": framework, "start_ps": starts,
                         "end_ps": starts + durations, "duration_ps": durations})


def _enclosing_names(host, children: np.ndarray, parents: np.ndarray) -> list[str | None]:
    """For each child row, the name of the innermost parent row on the same thread that contains it.

    The parents are sorted by (plane, line, start); each child's candidates are the parents of its line that start
    no later than it does, the latest first: a few rounds over all children step each back to the latest one that
    also ends no earlier (the innermost; of parents that start together, the first in that order)."""
    ev = host.events
    plane, line = host.line_ids(parents)
    start = take(ev, "start_ps", parents)
    order = np.lexsort((start, line, plane))
    plane, line, start, parents = plane[order], line[order], start[order], parents[order]
    end = start + take(ev, "duration_ps", parents)
    names = Coded.of(ev, "name", parents)
    child_plane, child_line = host.line_ids(children)
    child_start = take(ev, "start_ps", children)
    child_end = child_start + take(ev, "duration_ps", children)
    # each line's parents: [low, high) of the sorted parents
    new_line = np.r_[True, (plane[1:] != plane[:-1]) | (line[1:] != line[:-1])] if len(plane) else np.zeros(0, bool)
    line_low = np.flatnonzero(new_line)
    line_high = np.r_[line_low[1:], len(plane)].astype(np.int64)
    where = {(int(p), int(q)): i for i, (p, q) in enumerate(zip(plane[line_low].tolist(), line[line_low].tolist(),
                                                                 strict=True))}
    low = np.full(len(children), 0, np.int64)
    candidate = np.full(len(children), -1, np.int64)  # the latest parent of the child's line starting no later
    of_line = np.fromiter((where.get((p, q), -1) for p, q in zip(child_plane.tolist(), child_line.tolist(),
                                                                  strict=True)), np.int64, len(children))
    for index in np.unique(of_line[of_line >= 0]).tolist():
        mine = np.flatnonzero(of_line == index)
        first, last = int(line_low[index]), int(line_high[index])
        low[mine] = first
        candidate[mine] = first + np.searchsorted(start[first:last], child_start[mine], side="right") - 1
    best = np.full(len(children), -1, np.int64)
    todo = np.flatnonzero(candidate >= low)
    for _ in range(ENCLOSING_ROUNDS):  # step back past the parents that end too early
        if not len(todo):
            break
        ok = end[candidate[todo]] >= child_end[todo]
        best[todo[ok]] = candidate[todo[ok]]
        todo = todo[~ok]
        candidate[todo] -= 1
        todo = todo[candidate[todo] >= low[todo]]
    # the rest (deep searches), and the children whose innermost parent starts with another: one by one
    tied = np.flatnonzero(best > low)
    tied = tied[start[best[tied] - 1] == start[best[tied]]]
    for child in np.r_[todo, tied].astype(np.int64).tolist():
        first, last = int(low[child]), int(candidate[child]) + 1
        inside = np.flatnonzero((start[first:last] <= child_start[child]) & (end[first:last] >= child_end[child]))
        best[child] = first + inside[np.argmax(start[first:last][inside])] if len(inside) else -1
    out: list[str | None] = []
    for position in best.tolist():
        if position < 0:
            out.append(None)
            continue
        code = names.codes[position]
        out.append(str(names.labels[code]) if code >= 0 else "nan")
    return out


ENCLOSING_ROUNDS = 16
"""Parents a compile event's search steps back over together with the others'; a deeper one looks on its own."""


def _program_variants(host) -> dict[str, int]:
    """Distinct program ids per module name among executed programs (device modules or CPU thunks).
    Each distinct event name is parsed once; which names ran is read from the rows' name codes."""
    ev = host.events
    out: dict[str, int] = {}
    modules = _names_that_ran(ev, module_rows(host))
    if modules:
        parsed = pd.Series(modules, dtype=object).str.extract(r"^(?P<module>.*)\((?P<pid>\d+)\)$").dropna()
        out.update(parsed.groupby("module")["pid"].nunique().to_dict())
    # TensorFlow: each traced concrete function runs as __inference_<fn>_<unique id>.
    tf_runs = _names_that_ran(ev, np.flatnonzero(name_matches(ev, r"^EagerLocalExecute: __inference_")))
    if tf_runs:
        parsed = pd.Series(tf_runs, dtype=object).str.extract(
            r"^EagerLocalExecute: __inference_(?P<fn>.+)_(?P<uid>\d+)$")
        for fn, n in parsed.dropna().groupby("fn")["uid"].nunique().items():
            out.setdefault(str(fn), int(n))
    if "hlo_module" in ev.columns and host.has_stat("program_id"):
        with_program = host.rows_with("program_id")
        cpu = with_program[ev["hlo_module"].notna().to_numpy()[with_program]]
        if len(cpu):
            module = Coded.of(ev, "hlo_module", cpu)
            program = Coded.of_stat(host, "program_id", cpu)
            pairs = np.unique(np.stack([module.codes.astype(np.int64), program.codes.astype(np.int64)]), axis=1)
            counts: dict[str, int] = {}
            for code in pairs[0]:
                label = str(module.labels[code])
                counts[label] = counts.get(label, 0) + 1
            for name in sorted(counts):
                out.setdefault(name, counts[name])
    return {k: int(v) for k, v in out.items()}


def _names_that_ran(ev: pd.DataFrame, rows: np.ndarray) -> list[str]:
    """The distinct names of the events at ``rows`` (each once)."""
    names = Coded.of(ev, "name", rows)
    present = np.unique(names.codes)
    return [str(names.labels[c]) for c in present if c >= 0]


def _metadata_programs(host) -> int:
    planes = host.planes
    meta = planes[mask(planes["plane_name"] == "/host:metadata")]
    if meta.empty or "n_event_metadata" not in planes.columns:
        return 0
    return int(meta["n_event_metadata"].sum())
