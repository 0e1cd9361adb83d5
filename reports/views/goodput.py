"""The goodput report's view: ETTR and where the wall time went (a row and a bar per bucket), the ``--min-ettr``
verdict, one lane per start of the job on the wall clock (HTML), the steps that stand out, the checkpoint saves,
the findings, what the log could not tell; in JUnit the ``--min-ettr`` threshold before the findings."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.view import Bar, Chart, Section, Span, Suite, Table, View, findings_of
from tpudoctor.units import format_duration

BUCKET_LABELS = {
    "PRODUCTIVE": "productive steps",
    "TPU_INITIALIZATION": "TPU initialisation",
    "TRAINING_PREP": "training preparation",
    "PROGRAM_STARTUP": "compilation / first step",
    "DATA_LOADING_SYNC": "waiting for data",
    "UNPRODUCTIVE_CHECKPOINT_SAVE_TIME": "checkpoint saves (blocking)",
    "UNPRODUCTIVE_CHECKPOINT_RESTORE_TIME": "checkpoint restores",
    "WASTED_PROGRESS_FROM_DISRUPTION": "steps redone after a restart",
    "INFRASTRUCTURE_RECOVERY_FROM_DISRUPTION": "down between failure and restart",
    "OTHER": "other",
}
GATE_WORDS = {"passed": "PASSED", "failed": "FAILED", "not_judged": "NOT JUDGED"}
SHOWN_OUTLIERS = 20


def headline(doc: dict[str, Any]) -> str:
    g = doc["goodput"]
    if g.get("ettr") is None:
        return f"ETTR unknown: {(g.get('nulls') or {}).get('ettr') or 'unknown'}"
    if (g.get("consistency") or {}).get("unsupported"):
        return (f"ETTR {g['ettr']:.3f} not supported: the log's times contradict each other, so the figures below "
                f"are not usable ({format_duration(g['wall_s'])} of wall time as read)")
    return (f"ETTR {g['ettr']:.3f}: {g['goodput_percent']:.1f}% of {format_duration(g['wall_s'])} went to productive "
            f"steps ({format_duration(g['productive_s'])})")


def step_line(g: dict[str, Any]) -> str:
    if g.get("steps") is None:
        return "No step lines."
    span = f" ({g['first_step']} to {g['last_step']})" if g.get("first_step") is not None else ""
    parts = [f"{g['steps']} step(s){span}", f"{g['restarts']} restart(s)", f"{g['repeated_steps']} step(s) done again",
             f"{g['checkpoint_saves']} checkpoint save(s) ({g.get('checkpoint_saves_sync', 0)} sync, "
             f"{g.get('checkpoint_saves_async', 0)} async)"]
    if g.get("median_step_s") is not None:
        parts.append(f"median step {g['median_step_s']:.3f} s (from {g.get('step_time_source')})")
    return "; ".join(parts) + "."


def _buckets(g: dict[str, Any]) -> Section:
    """Productive first, then the badput buckets, each with its time, share of the wall and why."""
    rows = [("PRODUCTIVE", g.get("productive_s"), g.get("goodput_percent"), (g.get("nulls") or {}).get("productive_s"))]
    for name, entry in (g.get("badput") or {}).items():
        note = entry.get("reason") or ("estimated from step intervals" if entry.get("estimated") else "")
        if name == "OTHER" and entry.get("parts"):
            note = "; ".join(f"{k}: {format_duration(v)}" for k, v in entry["parts"].items())
        rows.append((name, entry.get("seconds"), entry.get("percent"), note))
    table = Table(("bucket", "what", "time", "% of wall", "note"), tuple(
        (name, BUCKET_LABELS.get(name, name), format_duration(s), "n/a" if p is None else f"{p:.2f}", note or "")
        for name, s, p, note in rows), align="llrr")
    bars = tuple(Bar(BUCKET_LABELS.get(name, name), p, f"{p:.1f}%", name != "PRODUCTIVE")
                 for name, _, p, _ in rows if p)
    return Section("Where did the time go", table=table, chart=Chart("share of the wall time", bars) if bars else None)


def _starts(g: dict[str, Any]) -> Section | None:
    runs, wall = g.get("runs") or [], g.get("wall_s")
    if not runs:
        return None
    rows = tuple((f"start {i + 1}", f"{r['first_step']}-{r['last_step']}" if r.get("first_step") is not None
                  else "no step", r.get("start_reason") or "", r.get("end_reason") or "") for i, r in enumerate(runs))
    spans = tuple(Span(f"start {i + 1}", b["start_s"], b["start_s"] + b["seconds"],
                       f"{BUCKET_LABELS.get(b['bucket'], b['bucket'])}: {b['label']} ({format_duration(b['seconds'])})",
                       group=BUCKET_LABELS.get(b["bucket"], b["bucket"]))
                  for i, r in enumerate(runs) for b in r.get("bands") or []
                  if b.get("start_s") is not None and b.get("seconds"))
    chart = (Chart("one lane per start of the job", spans=spans, axis=("", "0 s", format_duration(wall)))
             if spans and wall else None)
    return Section("Starts", table=Table(("start", "steps", "began", "ended"), rows), chart=chart)


def _notes(doc: dict[str, Any]) -> Section | None:
    g = doc["goodput"]
    notes = [*(g.get("notes") or ()), *(f"{k} is unknown: {v}" for k, v in (g.get("nulls") or {}).items())]
    for s in doc["sources"]:
        if s.get("problem"):
            notes.append(f"{s['source']} is {s['problem']}")
        if s.get("non_utf8_lines"):
            notes.append(f"{s['source']}: {s['non_utf8_lines']} line(s) had bytes that are not UTF-8 (read as U+FFFD)")
    return Section("Notes", notes=tuple(notes)) if notes else None


def view(doc: dict[str, Any]) -> View:
    from tpudoctor.goodput.report import GoodputReport

    g, findings = doc["goodput"], findings_of(doc)
    notes = [headline(doc), step_line(g)]
    if doc.get("wall_start"):
        notes.append(f"From {doc['wall_start']} to {doc['wall_end']} (lead worker: {doc.get('lead_worker')}; "
                     f"{doc['clock']['zone']})")
    confidence = (g.get("consistency") or {}).get("confidence") or {}
    if confidence.get("level") in ("medium", "low"):
        notes.append(f"Confidence in the figures: {confidence['level']}: {'; '.join(confidence['reasons'])[:400]}")
    gate = doc.get("gate")
    outliers = g.get("outlier_steps") or []
    sections = [
        Section(notes=(f"--min-ettr {gate['min_ettr']}: {GATE_WORDS[gate['verdict']]} ({gate['reason']})",),
                marked=gate["verdict"] == "failed") if gate else None,
        _buckets(g), _starts(g),
        Section(f"Steps that stand out ({g.get('outlier_count')}; median {g.get('median_step_s')} s)", table=Table(
            ("step", "steps", "seconds", "over median (s)"), tuple((str(o.get("step")), str(o.get("steps", "")),
                                                                   str(o["seconds"]), str(o["excess_s"]))
                                                                  for o in outliers[:SHOWN_OUTLIERS]), align="rrrr"))
        if outliers else None,
        Section("Checkpoint saves", table=Table(("step", "mode", "blocking s", "how known", "total s", "line"), tuple(
            tuple("" if s.get(k) is None else str(s[k]) for k in ("step", "mode", "blocking_s", "blocking_source",
                                                                    "total_s", "where")) for s in g["saves"])),
                verbose_only=True) if g.get("saves") else None,
        Section("Findings", findings=findings), _notes(doc),
        Section("ml-goodput-measurement's recorder entries", code=tuple(doc["instrumented"].get("lines") or ()))
        if doc.get("instrumented") else None]
    suite = Suite("tpudoctor goodput", "tpudoctor.goodput", timestamp=doc["created_at"], summary=headline(doc),
                  properties=tuple((k, str(g[k])) for k in ("ettr", "wall_s", "productive_s", "steps", "restarts")
                                   if g.get(k) is not None))
    sources = ", ".join(str(s["source"]) for s in doc["sources"])
    return View("goodput", f"tpudoctor goodput: {sources}", tuple(notes), tuple(sections),
                findings, suite, thresholds=tuple(GoodputReport(doc).threshold_results))
