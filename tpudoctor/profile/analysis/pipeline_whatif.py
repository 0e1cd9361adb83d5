"""What-if of a pipeline-parallel job from its op trace: the step replayed as a dependency graph.

The definitions are those of Lin et al., "Understanding Stragglers in Large Model Training Using
What-if Analysis" (arXiv 2505.05713). A step is a graph of ops: each worker (one ``rank``) runs its ops
in order; a pipeline send and its receive on the next (or previous) stage, and a collective over its
group (data-parallel ranks of a stage, first and last stage, every rank), complete together when
the last participant has arrived plus the transfer time. The transfer time of a communication is
what the last arriving participant spent in it (it waited for nobody). Replaying the recorded
durations gives ``T_ori``; replacing every op by its type's typical duration over all workers and
steps (compute: the mean per op type; communication: the median transfer per kind, a transfer's
rare long tail being congestion, not its typical cost) gives ``T_ideal``.

    S      = T_ori / T_ideal                                        (Eq. 1, the slowdown)
    S_G    = T(only the ops of G as recorded, the rest ideal) / T_ideal   (Eq. 2, 4: op type, dp rank, stage)
    M_G    = (T_ori - T(G ideal, the rest as recorded)) / (T_ori - T_ideal)   (Eq. 5)

``M_S`` takes G = the last stage (stage imbalance), ``M_W`` the worker whose ops alone slow the job
most (an individual worker). Every scenario is one column of the same replay: the graph is walked
once, level by level, with all steps and scenarios as arrays.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import numpy as np
import pandas as pd

FORWARD_PP, BACKWARD_PP = "forward-pp-comm", "backward-pp-comm"
P2P_KIND = {"forward-send": FORWARD_PP, "forward-recv": FORWARD_PP,
            "backward-send": BACKWARD_PP, "backward-recv": BACKWARD_PP}
DP_COLLECTIVES = ("grads-reduce-scatter", "params-all-gather")
EMBEDDING_COLLECTIVE = "embedding-grads-all-reduce"
GLOBAL_COLLECTIVES = ("optimizer-clip-main-grad",)
TRACE_COLUMNS = ("dp_rank", "stage", "rank", "step", "optype", "start_ts", "duration", "seq_id")


@dataclasses.dataclass
class StepGraph:
    """One step's ops (the same in every step) as a longest-path DAG.

    ``ops``: one row per op (``rank``, ``dp_rank``, ``stage``, ``optype``, ``seq_id``, ``kind`` its
    group for pricing: the op type, or the pipeline direction for sends and receives). ``nodes``:
    per node the op indices it stands for (a batched send and receive on one worker is one node).
    The end of node ``n`` is the max over its terms ``i`` of ``end[term_dep[i]] + weight[term_op[i]]``
    (``term_dep`` -1: the step's start); ``levels`` orders the nodes so that every dependency
    comes first. ``comm_event`` per op: its communication's index (-1 for compute)."""

    ops: pd.DataFrame
    term_node: np.ndarray
    term_dep: np.ndarray
    term_op: np.ndarray
    levels: list[np.ndarray]
    n_nodes: int
    comm_event: np.ndarray
    event_last: np.ndarray  # per communication, the op index of its last arriving participant
    _level_terms: list | None = dataclasses.field(default=None, repr=False)


def _event_key(row) -> tuple | None:
    """The communication an op takes part in (its participants share the key), or None for compute."""
    t, dp, st, seq = row.optype, row.dp_rank, row.stage, row.seq_id
    if t == "forward-send":
        return (FORWARD_PP, dp, st, seq)
    if t == "forward-recv":
        return (FORWARD_PP, dp, st - 1, seq)
    if t == "backward-send":
        return (BACKWARD_PP, dp, st, seq)
    if t == "backward-recv":
        return (BACKWARD_PP, dp, st + 1, seq)
    if t in DP_COLLECTIVES:
        return (t, st, seq)
    if t == EMBEDDING_COLLECTIVE:
        return (t, dp, seq)
    if t in GLOBAL_COLLECTIVES:
        return (t, seq)
    return None


def build_step_graph(step_ops: pd.DataFrame) -> StepGraph:
    """The graph of one step's ops (``TRACE_COLUMNS``), in the order each worker ran them."""
    ops = step_ops.sort_values(["rank", "start_ts", "seq_id"], kind="stable").reset_index(drop=True)
    ops["kind"] = [P2P_KIND.get(t, t) for t in ops["optype"].astype(str)]
    keys = [_event_key(r) for r in ops.itertuples(index=False)]
    event_ids: dict[tuple, int] = {}
    comm_event = np.array([-1 if k is None else event_ids.setdefault(k, len(event_ids)) for k in keys], np.int64)
    # one node per op, except a batched send+receive: same worker, same start and duration
    node_of = np.empty(len(ops), np.int64)
    n_nodes, prev_key = 0, None
    ranks, starts, durs = ops["rank"].to_numpy(), ops["start_ts"].to_numpy(), ops["duration"].to_numpy()
    for i in range(len(ops)):
        key = (ranks[i], starts[i], durs[i])
        if key == prev_key and comm_event[i] >= 0 and comm_event[i - 1] >= 0:
            node_of[i] = n_nodes - 1
        else:
            node_of[i] = n_nodes
            n_nodes += 1
        prev_key = key
    # the node each node waits on: the previous node of its worker
    prev_node = np.full(n_nodes, -1, np.int64)
    first_op_of_node = np.full(n_nodes, -1, np.int64)
    for i in range(len(ops)):
        if first_op_of_node[node_of[i]] < 0:
            first_op_of_node[node_of[i]] = i
    for n in range(1, n_nodes):
        a, b = first_op_of_node[n - 1], first_op_of_node[n]
        if ranks[a] == ranks[b]:
            prev_node[n] = n - 1
    participants: dict[int, list[int]] = defaultdict(list)
    for i, e in enumerate(comm_event):
        if e >= 0:
            participants[int(e)].append(i)
    event_last = np.zeros(len(event_ids), np.int64)
    for e, members in participants.items():
        event_last[e] = members[int(np.argmax(starts[members]))]
    term_node, term_dep, term_op = [], [], []
    for i in range(len(ops)):
        n = node_of[i]
        e = comm_event[i]
        if e < 0:
            term_node.append(n), term_dep.append(prev_node[n]), term_op.append(i)
            continue
        # a communication completes after its last participant's arrival plus the transfer
        for j in participants[int(e)]:
            term_node.append(n), term_dep.append(prev_node[node_of[j]]), term_op.append(i)
    term_node, term_dep, term_op = (np.array(x, np.int64) for x in (term_node, term_dep, term_op))
    levels = _levels(n_nodes, term_node, term_dep)
    return StepGraph(ops, term_node, term_dep, term_op, levels, n_nodes, comm_event, event_last)


def _levels(n_nodes: int, term_node: np.ndarray, term_dep: np.ndarray) -> list[np.ndarray]:
    """Topological generations: a node's level is one more than its deepest dependency's."""
    deps: list[set[int]] = [set() for _ in range(n_nodes)]
    for n, d in zip(term_node, term_dep, strict=True):
        if d >= 0 and d != n:
            deps[n].add(int(d))
    users: list[list[int]] = [[] for _ in range(n_nodes)]
    waiting = np.zeros(n_nodes, np.int64)
    for n, ds in enumerate(deps):
        waiting[n] = len(ds)
        for d in ds:
            users[d].append(n)
    level = [n for n in range(n_nodes) if waiting[n] == 0]
    out, seen = [], 0
    while level:
        out.append(np.sort(np.array(level, np.int64)))
        seen += len(level)
        nxt = []
        for n in level:
            for u in users[n]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    nxt.append(u)
        level = nxt
    if seen != n_nodes:
        raise ValueError(f"the ops' dependencies form a cycle ({n_nodes - seen} ops never start): "
                         "the trace's send/receive or collective order is inconsistent")
    return out


def level_terms(graph: StepGraph) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Per level: its nodes, its terms' dependency and op, where each node's terms begin (computed once)."""
    if graph._level_terms is None:
        order = np.argsort(graph.term_node, kind="stable")
        t_node, t_dep, t_op = graph.term_node[order], graph.term_dep[order], graph.term_op[order]
        level_of = np.empty(graph.n_nodes, np.int64)
        for k, level in enumerate(graph.levels):
            level_of[level] = k
        term_level = level_of[t_node]
        by_level = np.argsort(term_level, kind="stable")
        bounds = np.searchsorted(term_level[by_level], np.arange(len(graph.levels) + 1))
        out = []
        for k, level in enumerate(graph.levels):
            idx = by_level[bounds[k]:bounds[k + 1]]
            pos = np.searchsorted(level, t_node[idx])  # terms in node order: each node's terms are one run
            out.append((level, t_dep[idx], t_op[idx], np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])))
        graph._level_terms = out
    return graph._level_terms


def replay(graph: StepGraph, weights: np.ndarray) -> np.ndarray:
    """``weights``: ops x columns (each column one step in one scenario). Returns each column's
    step time (the last node's end)."""
    n_cols = weights.shape[1]
    end = np.zeros((graph.n_nodes + 1, n_cols))  # the last row: the step's start, 0
    for level, dep, op, runs in level_terms(graph):
        vals = end[dep] + weights[op]
        end[level] = vals if len(runs) == len(vals) else np.maximum.reduceat(vals, runs, axis=0)
    return end[:-1].max(axis=0)


def step_weights(graph: StepGraph, trace: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per op of the graph and per step (columns in step order): the recorded duration of compute
    ops and the transfer time of communications (the last arriving participant's duration), and
    the steps."""
    key = ["rank", "optype", "seq_id"]
    ops = graph.ops[key].astype({"optype": str})
    frame = trace[key + ["step", "start_ts", "duration"]].astype({"optype": str})
    steps = np.sort(frame["step"].unique())
    pos = pd.MultiIndex.from_frame(ops).get_indexer(pd.MultiIndex.from_frame(frame[key]))
    if (pos < 0).any():
        raise ValueError("the steps ran different ops: a step has an op the first step lacks")
    col = np.searchsorted(steps, frame["step"].to_numpy())
    start = np.full((len(ops), len(steps)), np.nan)
    dur = np.full((len(ops), len(steps)), np.nan)
    start[pos, col] = frame["start_ts"].to_numpy(np.float64)
    dur[pos, col] = frame["duration"].to_numpy(np.float64)
    if np.isnan(dur).any():
        raise ValueError("the steps ran different ops: a step lacks an op of the first step")
    weights = dur.copy()
    comm = graph.comm_event >= 0
    # per communication and step, the duration of its last arriving participant
    ev = graph.comm_event[comm]
    members = np.flatnonzero(comm)
    order = np.argsort(ev, kind="stable")
    ev_sorted, mem_sorted = ev[order], members[order]
    bounds = np.flatnonzero(np.r_[True, ev_sorted[1:] != ev_sorted[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        group = mem_sorted[a:b]
        last = group[np.argmax(start[group], axis=0)]
        weights[group] = dur[last, np.arange(len(steps))][None, :]
    return weights, steps


# ---- the what-ifs ---------------------------------------------------------------------------------

COMPUTE_KINDS = ("forward-compute", "backward-compute", "optimizer")
PRICE_FLOOR_PERCENT = 1.0
"""A persistent excess is priced (a worker named) when removing it saves at least this share of the step."""
STAGE_IMBALANCE_M_S = 0.5
NO_SLOWDOWN = 1.02
CAUSES = ("persistent worker", "stage imbalance", "random imbalance", "none")
SCENARIO_BATCH = 24
MAX_PATH_STEPS = 1


@dataclasses.dataclass
class PipelineWhatIf:
    """The what-if of an op trace (times in ms per step, the mean over the steps).

    ``simulated_step_ms`` (``T_ori``) and ``ideal_step_ms`` (``T_ideal``), ``slowdown`` (S, Eq. 1).
    ``by_optype``/``by_dp_rank``/``by_stage``: ``group``, ``slowdown`` (S_G: only that group as
    recorded). ``m_w``/``m_s`` (Eq. 5) with ``m_w_worker``/``m_s_stage`` their group.
    ``per_worker``: ``rank``, ``dp_rank``, ``stage``, ``saved_ms``/``saved_percent`` (the worker's ops
    all at their type's typical duration: removes its random spread too), ``persistent_saved_ms``/
    ``persistent_saved_percent`` (only its persistent excess over its stage peers removed),
    ``excess_ms`` (median per step), ``p_value``, ``persistent``, ``priced`` (persistent and its
    saving at least ``PRICE_FLOOR_PERCENT``), ``onset_step``, ``time_class``. ``cause`` (``CAUSES``):
    a priced worker; else the last stage's imbalance (``m_s`` at least ``STAGE_IMBALANCE_M_S``); else a
    slowdown spread across workers (random imbalance: nobody to name); else none.
    ``critical_path``: the chain of ops that sets the slowest step's time (``rank``, ``optype``,
    ``seq_id``, ``start_ms``, ``end_ms``)."""

    status: str
    reason: str
    workers: int = 0
    steps: int = 0
    meta: dict = dataclasses.field(default_factory=dict)
    simulated_step_ms: float | None = None
    ideal_step_ms: float | None = None
    slowdown: float | None = None
    per_step: pd.DataFrame | None = None
    by_optype: pd.DataFrame | None = None
    by_dp_rank: pd.DataFrame | None = None
    by_stage: pd.DataFrame | None = None
    m_w: float | None = None
    m_w_worker: int | None = None
    m_s: float | None = None
    m_s_stage: int | None = None
    per_worker: pd.DataFrame | None = None
    critical_path: pd.DataFrame | None = None
    critical_step: int | None = None
    cause: str = "none"
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.status == "known"

    @property
    def priced_workers(self) -> pd.DataFrame:
        if self.per_worker is None:
            return pd.DataFrame()
        return self.per_worker[self.per_worker["priced"]].sort_values("persistent_saved_ms", ascending=False)

    def to_dict(self, max_rows: int = 200) -> dict:
        from tpudoctor.profile.analysis.whatif import _plain

        def recs(frame):
            return [] if frame is None else [{k: _plain(v) for k, v in r.items()}
                                             for r in frame.head(max_rows).to_dict(orient="records")]
        return {"status": self.status, "reason": self.reason, "workers": self.workers, "steps": self.steps,
                "meta": self.meta, "simulated_step_ms": _plain(self.simulated_step_ms),
                "ideal_step_ms": _plain(self.ideal_step_ms), "slowdown": _plain(self.slowdown),
                "cause": self.cause, "m_w": _plain(self.m_w), "m_w_worker": self.m_w_worker,
                "m_s": _plain(self.m_s), "m_s_stage": self.m_s_stage,
                "by_optype": recs(self.by_optype), "by_dp_rank": recs(self.by_dp_rank), "by_stage": recs(self.by_stage),
                "per_worker": recs(self.per_worker), "priced_workers": recs(self.priced_workers),
                "per_step": recs(self.per_step), "critical_step": self.critical_step,
                "critical_path": recs(self.critical_path),
                "critical_path_ops_per_rank": self.critical_path_ops_per_rank(), "notes": list(self.notes)}

    def critical_path_ops_per_rank(self) -> list[dict[str, int]]:
        """How many of the critical path's ops each rank runs, most first (ties in the order the path meets them)."""
        if self.critical_path is None:
            return []
        counts = Counter(int(rank) for rank in self.critical_path["rank"])
        return [{"rank": rank, "ops": n} for rank, n in counts.most_common()]


def ideal_weights(graph: StepGraph, weights: np.ndarray) -> np.ndarray:
    """Per op, its type's typical duration over every worker and step: the mean of a compute op
    type, the median transfer of a communication kind (each communication counted once). Against
    ByteDance's published ideal step (``step_t_noblk``) this lands within 0.3 % on their three
    traces; the mean for communications too was 0.8 % (AR) to 1.3 % (ST) high."""
    kind = graph.ops["kind"].to_numpy()
    ideal = np.empty(len(kind))
    for k in np.unique(kind):
        m = kind == k
        rows = np.flatnonzero(m)
        ev = graph.comm_event[m]
        if (ev >= 0).any():
            _, first = np.unique(ev, return_index=True)
            ideal[m] = float(np.median(weights[rows[first]]))
        else:
            ideal[m] = float(np.mean(weights[rows]))
    return ideal


def replay_scenarios(graph: StepGraph, weights: np.ndarray, scenarios: list) -> np.ndarray:
    """Each scenario: ops x steps of durations (or an ops vector, the same every step), or a callable
    that makes them (made only when its batch is replayed: a few hundred scenarios of a large trace
    would not fit at once). Returns scenarios x steps step times."""
    n_steps = weights.shape[1]
    out = np.empty((len(scenarios), n_steps))
    for a in range(0, len(scenarios), SCENARIO_BATCH):
        batch = [s() if callable(s) else s for s in scenarios[a:a + SCENARIO_BATCH]]
        cols = np.concatenate([np.broadcast_to(s if s.ndim == 2 else s[:, None], weights.shape) for s in batch], axis=1)
        out[a:a + len(batch)] = replay(graph, cols).reshape(len(batch), n_steps)
    return out


def pipeline_whatif(ops: pd.DataFrame, meta: dict | None = None) -> PipelineWhatIf:
    """The what-ifs of an op trace (``op_trace.OpTrace.ops``): see the module docstring."""
    from tpudoctor.profile.analysis.persistence import excess_test

    ops = ops[ops["optype"].astype(str) != "first-op"]
    steps_all = np.sort(ops["step"].unique())
    if len(steps_all) < 2 or ops["rank"].nunique() < 2:
        return PipelineWhatIf("unknown", "one worker or one step: nothing to compare (a trace of two or more "
                              "workers over several steps would tell)", int(ops["rank"].nunique()), len(steps_all))
    try:
        graph = build_step_graph(ops[ops["step"] == steps_all[0]])
        weights, steps = step_weights(graph, ops)
    except ValueError as exc:
        return PipelineWhatIf("unknown", str(exc), int(ops["rank"].nunique()), len(steps_all))
    ideal = ideal_weights(graph, weights)
    g = graph.ops
    ranks, stage, dp = g["rank"].to_numpy(), g["stage"].to_numpy(), g["dp_rank"].to_numpy()
    kind = g["kind"].to_numpy()

    def only(mask):  # the group's ops as recorded, the rest ideal (made when replayed)
        return lambda: np.where(mask[:, None], weights, ideal[:, None])

    groups = [("optype", kind), ("dp_rank", dp), ("stage", stage)]
    scen = [weights, ideal]
    labels: list[tuple[str, object]] = [("ori", None), ("ideal", None)]
    for name, col in groups:
        for v in np.unique(col):
            scen.append(only(col == v)), labels.append((name, v))
    last_stage = stage.max()
    scen.append(only(stage != last_stage)), labels.append(("ms_rem", last_stage))
    worker_ids = np.unique(ranks)
    for r in worker_ids:
        scen.append(only(ranks == r)), labels.append(("worker_add", r))
        scen.append(only(ranks != r)), labels.append(("worker_rem", r))
    # each worker's excess over its stage peers, op by op and step by step (compute ops: the cause; its
    # waits are the effect of others)
    compute = np.isin(kind, COMPUTE_KINDS)
    peer = np.zeros_like(weights)
    key = pd.MultiIndex.from_arrays([stage, kind, g["seq_id"].to_numpy()])
    codes = pd.factorize(key)[0]
    for c in np.unique(codes):
        m = codes == c
        peer[m] = np.median(weights[m], axis=0)
    excess = np.where(compute[:, None], weights - peer, 0.0)
    tests = {}
    for r in worker_ids:
        mine = ranks == r
        tests[r] = excess_test(excess[mine].sum(axis=0), len(worker_ids))
    def without_persistent_excess(r, start):  # only the worker's persistent excess removed, since its onset
        def make():
            rows = ranks == r
            part = np.clip(np.median(excess[rows, start:], axis=1), 0, None)
            fixed = weights.copy()
            fixed[rows, start:] = weights[rows, start:] - part[:, None]
            return fixed
        return make

    for r in worker_ids:
        scen.append(without_persistent_excess(r, tests[r].onset_index or 0))
        labels.append(("worker_persistent", r))
    times = replay_scenarios(graph, weights, scen) * 1e3
    mean = times.mean(axis=1)
    at = {lab: i for i, lab in enumerate(labels)}
    t_ori, t_ideal = mean[at[("ori", None)]], mean[at[("ideal", None)]]

    def frame(name):
        rows = [(str(v), mean[i] / t_ideal) for (n, v), i in at.items() if n == name]
        return pd.DataFrame(rows, columns=["group", "slowdown"]).sort_values("slowdown", ascending=False,
                                                                              ignore_index=True)
    adds = {r: mean[at[("worker_add", r)]] for r in worker_ids}
    worst = max(adds, key=adds.get)
    span = t_ori - t_ideal
    m_w = (t_ori - mean[at[("worker_rem", worst)]]) / span if span > 0 else None
    m_s = (t_ori - mean[at[("ms_rem", last_stage)]]) / span if span > 0 else None
    per_worker = []
    for r in worker_ids:
        rows = ranks == r
        t = tests[r]
        saved = t_ori - mean[at[("worker_rem", r)]]
        kept = t_ori - mean[at[("worker_persistent", r)]]
        comm_part = float(np.median((weights - ideal[:, None])[rows & ~compute].sum(axis=0)))
        per_worker.append({
            "rank": int(r), "dp_rank": int(dp[rows][0]), "stage": int(stage[rows][0]),
            "saved_ms": saved, "saved_percent": 100 * saved / t_ori,
            "persistent_saved_ms": kept if t.persistent else 0.0,
            "persistent_saved_percent": 100 * kept / t_ori if t.persistent else 0.0,
            "excess_ms": t.median_excess * 1e3, "p_value": t.p_value, "persistent": t.persistent,
            "onset_step": int(steps[t.onset_index]) if t.onset_index is not None else None,
            "time_class": "compute" if t.median_excess >= max(comm_part, 0.0) else "collective wait"})
    onsets = [w["onset_step"] for w in per_worker]
    per_worker = pd.DataFrame(per_worker).assign(onset_step=pd.Series(onsets, dtype=object))
    per_worker = per_worker.sort_values("saved_ms", ascending=False, ignore_index=True)
    per_worker["priced"] = per_worker["persistent"] & (per_worker["persistent_saved_percent"] >= PRICE_FLOOR_PERCENT)
    slowdown = t_ori / t_ideal
    if per_worker["priced"].any():
        cause = "persistent worker"
    elif m_s is not None and m_s >= STAGE_IMBALANCE_M_S:
        cause = "stage imbalance"
    elif slowdown >= NO_SLOWDOWN:
        cause = "random imbalance"
    else:
        cause = "none"
    per_step = pd.DataFrame({"step": steps, "simulated_ms": times[at[("ori", None)]],
                             "ideal_ms": times[at[("ideal", None)]]})
    slowest = int(np.argmax(times[at[("ori", None)]]))
    path = critical_path(graph, weights[:, slowest])
    return PipelineWhatIf("known", "simulated", len(worker_ids), len(steps), dict(meta or {}), t_ori, t_ideal,
                          slowdown, per_step, frame("optype"), frame("dp_rank"), frame("stage"),
                          m_w, int(worst), m_s, int(last_stage), per_worker, path, int(steps[slowest]), cause)


def critical_path(graph: StepGraph, durations: np.ndarray) -> pd.DataFrame:
    """The chain of ops that sets the step's end (one step's durations, s): each op from the moment
    the op before it in the chain released it to its own end, ms. A communication's op stands for
    the participant that arrived last."""
    n = graph.n_nodes
    end = np.zeros(n)
    via = np.full(n, -1, np.int64)
    by_node: dict[int, list[int]] = defaultdict(list)
    for i, node in enumerate(graph.term_node):
        by_node[int(node)].append(i)
    op_of = np.zeros(n, np.int64)
    for level in graph.levels:
        for node in level:
            terms = by_node[int(node)]
            vals = [(end[graph.term_dep[i]] if graph.term_dep[i] >= 0 else 0.0) + durations[graph.term_op[i]]
                    for i in terms]
            best = int(np.argmax(vals))
            end[node], via[node], op_of[node] = vals[best], graph.term_dep[terms[best]], graph.term_op[terms[best]]
    node = int(np.argmax(end))
    chain = []
    while node >= 0:
        op = graph.ops.iloc[op_of[node]]
        start = end[via[node]] if via[node] >= 0 else 0.0
        chain.append((int(op["rank"]), int(op["dp_rank"]), int(op["stage"]), str(op["optype"]),
                      int(op["seq_id"]), start * 1e3, end[node] * 1e3))
        node = int(via[node])
    return pd.DataFrame(chain[::-1], columns=["rank", "dp_rank", "stage", "optype", "seq_id", "start_ms", "end_ms"])
