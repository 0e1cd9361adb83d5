"""The views of ``tpudoctor profile analyze``: an op trace's what-if (``pipeline_whatif``): the slowdown S, what it
comes from (a persistently slow worker, the last stage, or random imbalance spread across workers), the slowdown per
op type, dp rank and stage, M_W and M_S, each worker's saving, and the critical path of the slowest step (drawn in
HTML)."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.view import Chart, Section, Span, Suite, Table, View, properties

MAX_GROUP_ROWS = 8
MAX_WORKER_ROWS = 12
MAX_LANES = 32


def _f(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(float(value), spec)


def whatif_sentences(w: dict[str, Any]) -> list[str]:
    """What the what-if found, the sentences every format opens with."""
    if w["status"] != "known":
        return [f"What-if unknown: {w['reason']}"]
    meta = w.get("meta") or {}
    sizes = " x ".join(f"{k[:-5]} {meta[k]}" for k in ("dp_size", "pp_size", "tp_size") if k in meta)
    lines = [f"{w['workers']} workers{f' ({sizes})' if sizes else ''}, {w['steps']} steps replayed as a dependency "
             f"graph (pipeline sends/receives, data-parallel and global collectives): {_f(w['simulated_step_ms'], '.1f')} "
             f"ms per step, {_f(w['ideal_step_ms'], '.1f')} ms with every op at its type's typical duration: "
             f"slowdown S = {_f(w['slowdown'])}."]
    if w["cause"] == "persistent worker":
        for r in (w.get("priced_workers") or [])[:3]:
            since = f" since step {r['onset_step']}" if r.get("onset_step") is not None else ""
            lines.append(f"Straggler: rank {r['rank']} (dp rank {r['dp_rank']}, stage {r['stage']}) is persistently "
                         f"slow{since} ({r['time_class']}): removing its persistent excess saves "
                         f"{_f(r['persistent_saved_ms'], '.1f')} ms per step ({_f(r['persistent_saved_percent'], '.1f')}%); "
                         f"all its ops at the typical duration: {_f(r['saved_ms'], '.1f')} ms.")
    elif w["cause"] == "stage imbalance":
        lines.append(f"Stage imbalance: fixing the last stage (stage {w['m_s_stage']}) removes M_S = {_f(w['m_s'])} of "
                     "the slowdown; no single worker's excess is persistent and large enough to name.")
    elif w["cause"] == "random imbalance":
        lines.append(f"The slowdown (S = {_f(w['slowdown'])}) is spread across the workers (random imbalance): no "
                     "worker's excess over its stage peers is persistent beyond noise, so no host is named.")
    else:
        lines.append("No slowdown beyond noise.")
    lines.append(f"M_W = {_f(w['m_w'])} (fixing the worst worker, rank {w['m_w_worker']}); "
                 f"M_S = {_f(w['m_s'])} (fixing the last stage, stage {w['m_s_stage']}).")
    return lines


WORKER_COLUMNS = (("rank", "rank"), ("dp_rank", "dp"), ("stage", "stage"),
                  ("persistent_saved_ms", "saved ms (persistent excess)"), ("priced", "priced"),
                  ("p_value", "sign test p"), ("onset_step", "since step"), ("time_class", "kind"),
                  ("saved_ms", "saved ms (all ops typical, noise included)"))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return "-" if value is None else str(value)


def _critical_path(w: dict[str, Any]) -> Section | None:
    """The slowest step's critical path: ops per worker in a sentence, in HTML one lane per worker (compute red,
    communication light)."""
    path = w.get("critical_path") or []
    if not path:
        return None
    ranks: dict[int, int] = {}
    for r in path:
        ranks[r["rank"]] = ranks.get(r["rank"], 0) + 1
    top = ", ".join(f"rank {k} {v}" for k, v in sorted(ranks.items(), key=lambda kv: -kv[1])[:5])
    end = max(float(r["end_ms"]) for r in path)
    lanes = sorted(ranks)[:MAX_LANES]
    stage = {r["rank"]: (r["dp_rank"], r["stage"]) for r in path}
    spans = tuple(Span(f"rank {r['rank']} (dp {stage[r['rank']][0]}, stage {stage[r['rank']][1]})",
                       float(r["start_ms"]), float(r["end_ms"]),
                       f"{r['optype']} #{r['seq_id']}: {float(r['start_ms']):.2f}-{float(r['end_ms']):.2f} ms",
                       "compute" in r["optype"] or r["optype"] == "optimizer")
                  for rank in lanes for r in path if r["rank"] == rank)
    return Section("Critical path", notes=(
        f"Critical path of the slowest step (step {w.get('critical_step')}): {len(path)} ops, "
        f"{_f(path[-1]['end_ms'], '.1f')} ms; ops per worker on it: {top}.",),
        chart=Chart("critical path of the slowest step", spans=spans, axis=("", "0 ms", f"{end:.1f} ms"),
                    legend=("compute on the critical path", "communication on it (send/receive, collective)")))


def whatif_view(doc: dict[str, Any]) -> View:
    w = doc["whatif"]
    sections: list[Section] = [Section(notes=tuple(whatif_sentences(w)), marked=True)]
    if w["status"] == "known":
        sections += [Section(f"Slowdown with only one {title} as recorded (S_G)", table=Table(
            (title, "S_G"), tuple((str(r["group"]), _f(r["slowdown"])) for r in w.get(key, [])[:MAX_GROUP_ROWS]), "lr"))
            for title, key in (("op type", "by_optype"), ("dp rank", "by_dp_rank"), ("stage", "by_stage"))]
        sections.append(Section("Workers (largest all-typical saving first)", table=Table(
            tuple(label for _, label in WORKER_COLUMNS),
            tuple(tuple(_cell(r.get(k)) for k, _ in WORKER_COLUMNS) for r in (w.get("per_worker") or [])[:MAX_WORKER_ROWS]),
            "rrrrlrrlr")))
        sections.append(_critical_path(w))
    suite = Suite("tpudoctor profile analyze (op trace)", "tpudoctor.profile.whatif", properties=properties((
        ("source", doc["source"]), ("slowdown", w.get("slowdown")), ("cause", w.get("cause")))))
    return View("profile", f"tpudoctor profile analyze: op trace {doc['source']}", (),
                tuple(s for s in sections if s is not None), (), suite)
