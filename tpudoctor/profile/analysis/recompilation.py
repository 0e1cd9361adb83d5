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
    column,
    end_ps,
    mask,
    name_matches,
    outermost,
)

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
    on_host = mask(ev["plane_name"] == HOST_PLANE)
    rows: list[pd.DataFrame] = []

    jax_compiles = outermost(ev[on_host & name_matches(ev, JAX_COMPILE)])
    if not jax_compiles.empty:
        parents = ev[on_host & name_matches(ev, PJIT.pattern)]
        fn = _enclosing_names(jax_compiles, parents)
        fn = [PJIT.match(p).group("fn") if p else "(outside jit)" for p in fn]
        rows.append(_frame(jax_compiles, fn, "jax"))
    else:
        runtime = outermost(ev[on_host & name_matches(ev, RUNTIME_COMPILE)])
        if not runtime.empty:
            rows.append(_frame(runtime, ["(runtime compile)"] * len(runtime), "xla"))

    graphs = outermost(ev[on_host & name_matches(ev, TF_GRAPH_BUILDING)])
    if not graphs.empty:
        calls = ev[on_host & column(ev, "tf_function_call").notna().to_numpy()]
        fn = _enclosing_names(graphs, calls)
        rows.append(_frame(graphs, [p or "(tf.function)" for p in fn], "tensorflow"))
    tf_ops = ev[on_host & name_matches(ev, TF_COMPILE_OPS)]
    if not tf_ops.empty:
        names = tf_ops["name"].astype(str).str.split(":").str[0].tolist()
        rows.append(_frame(tf_ops, names, "tensorflow-xla"))

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

    from tpudoctor.profile.analysis.events import union_ps

    total_ps = union_ps(intervals["start_ps"].to_numpy(np.int64), intervals["end_ps"].to_numpy(np.int64)) \
        if not intervals.empty else 0
    tracing = column(ev, "tracing_count")
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


def _frame(events: pd.DataFrame, functions: list[str], framework: str) -> pd.DataFrame:
    starts = events["start_ps"].to_numpy(np.int64)
    return pd.DataFrame({"function": functions, "framework": framework, "start_ps": starts,
                         "end_ps": end_ps(events), "duration_ps": events["duration_ps"].to_numpy(np.int64)})


def _enclosing_names(children: pd.DataFrame, parents: pd.DataFrame) -> list[str | None]:
    """For each child, the name of the innermost parent on the same thread that contains it.

    Compile events are few (one per compilation), so a short search per child is cheap.
    """
    out: list[str | None] = []
    by_line = {key: grp.sort_values("start_ps") for key, grp in parents.groupby(["plane_id", "line_id"])}
    for plane_id, line_id, start, end in zip(children["plane_id"], children["line_id"],
                                             children["start_ps"].to_numpy(np.int64), end_ps(children), strict=True):
        grp = by_line.get((plane_id, line_id))
        name = None
        if grp is not None:
            s = grp["start_ps"].to_numpy(np.int64)
            e = end_ps(grp)
            inside = np.flatnonzero((s <= start) & (e >= end))
            if len(inside):
                best = inside[np.argmax(s[inside])]  # latest start = innermost
                name = str(grp["name"].iloc[best])
        out.append(name)
    return out


def _program_variants(host) -> dict[str, int]:
    """Distinct program ids per module name among executed programs (device modules or CPU thunks)."""
    ev = host.events
    out: dict[str, int] = {}
    modules = ev[mask(ev["line_name"] == "XLA Modules")]
    if not modules.empty:
        parsed = modules["name"].astype(str).str.extract(r"^(?P<module>.*)\((?P<pid>\d+)\)$").dropna()
        out.update(parsed.groupby("module")["pid"].nunique().to_dict())
    # TensorFlow: each traced concrete function runs as __inference_<fn>_<unique id>.
    tf_runs = ev[name_matches(ev, r"^EagerLocalExecute: __inference_")]
    if not tf_runs.empty:
        parsed = tf_runs["name"].astype(str).str.extract(r"^EagerLocalExecute: __inference_(?P<fn>.+)_(?P<uid>\d+)$")
        for fn, n in parsed.dropna().groupby("fn")["uid"].nunique().items():
            out.setdefault(str(fn), int(n))
    cpu = ev[column(ev, "hlo_module").notna().to_numpy() & column(ev, "program_id").notna().to_numpy()]
    if not cpu.empty:
        for module, n in cpu.groupby(cpu["hlo_module"].astype(str))["program_id"].nunique().items():
            out.setdefault(module, int(n))
    return {k: int(v) for k, v in out.items()}


def _metadata_programs(host) -> int:
    planes = host.planes
    meta = planes[mask(planes["plane_name"] == "/host:metadata")]
    if meta.empty or "n_event_metadata" not in planes.columns:
        return 0
    return int(meta["n_event_metadata"].sum())
