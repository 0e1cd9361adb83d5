"""From captures to a ``HangReport``: groups, the verdict, the odd one out, the root cause and the decision.

The odd one out: processes group by where their training thread stands. When most wait in a collective
or for the device, the others (in the data loader, a checkpoint write, a lock, a debugger, a busy loop,
compiling, gone) are what they wait for, the most telling kind first. When every process waits alike,
the processes stand at different lines (different programs), or in different waits (native frames show
one computing while the others wait in the collective), or nowhere else: the device work does not
finish, with no software cause in sight (REPLACE HOST-shaped), unless a Megascale digest or a process
that logged fewer steps than the others names the culprit.

Decisions: RESTART for a transient stall (storage, network, a process gone), FIX CODE for a cause in the
code (a lock, a breakpoint, a busy loop, programs that differ), REPLACE HOST for device work that does not
finish with no software cause (or a digest naming bad chips). Each comes with how sure it is and why.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Collection, Iterable
from typing import Any

from tpudoctor.findings import Finding, Target
from tpudoctor.hang.cause import root_cause
from tpudoctor.hang.classify import ONE_SNAPSHOT, process_state
from tpudoctor.hang.decide import decide
from tpudoctor.hang.digest import HangDigest
from tpudoctor.hang.model import ProcessCapture
from tpudoctor.hang.report import Decision, HangReport, ProcessState
from tpudoctor.hang.report_findings import findings, plugin_problem_findings
from tpudoctor.hang.rule import Category, HangRule
from tpudoctor.hang.verdict import group_states, job_rate, job_verdict


def analyze(captures: Iterable[ProcessCapture], *, target: Target, host: str, started_at: _dt.datetime,
            interval_s: float, samples: int, digests: Iterable[HangDigest] = (),
            rules: list[type[HangRule]] | None = None, workers: dict[str, dict[str, Any]] | None = None,
            worker_problems: Iterable[Finding] = (), environment: dict[str, Any] | None = None,
            disabled_plugins: Collection[str] = (), input_notes: Iterable[str] = ()) -> HangReport:
    """``workers`` (a pod): worker -> {status: reported | no_report | no_process, host, source}. ``rules``
    default to the registered ones less ``disabled_plugins`` (the run's ``disable_plugins`` setting).
    ``input_notes``: what the reading of the input left out (a dump given twice), said with the verdict."""
    from tpudoctor import __version__
    from tpudoctor.families import load_rules

    captures = list(captures)
    rules = rules if rules is not None else list(load_rules("hang-rules", disabled=disabled_plugins).values())
    states = [process_state(c, rules) for c in captures]
    workers = dict(workers or {})
    states += _absent_workers(workers)
    digests = list(digests)
    groups = group_states(states)
    verdict, why, confidence = job_verdict(states, groups)
    one_snapshot = why == ONE_SNAPSHOT
    notes = list(input_notes)
    if notes:
        why = f"{why} ({'; '.join(notes)})"
    if verdict == "progressing":
        for group in groups:
            group.odd_one_out = False
    report = HangReport(verdict=verdict, verdict_why=why, confidence=confidence, target=target, host=host,
                        started_at=started_at, interval_s=interval_s, samples=samples, processes=states,
                        groups=groups, findings=[], digests=digests, captures=captures, workers=workers,
                        tool_version=__version__, environment=dict(environment or {}))
    report.steps_per_s = job_rate(states)
    if verdict in ("hung", "unknown"):
        report.root_cause = root_cause(states, groups, digests, workers)
        if report.root_cause is not None and verdict == "hung":
            report.decision = decide(report.root_cause, report)
        elif report.root_cause is not None and one_snapshot:
            report.decision = _from_snapshots(decide(report.root_cause, report))
    report.findings = findings(report, list(worker_problems) + plugin_problem_findings(rules),
                               disabled_plugins=disabled_plugins)
    return report


def _from_snapshots(decision: Decision) -> Decision:
    """One dump per process shows where each stands, not that it stays there: one level less sure."""
    lower = {"high": "medium", "medium": "low", "low": "low"}[decision.confidence]
    return dataclasses.replace(decision, confidence=lower,
                               why=f"{decision.why} (from one snapshot per process: if the job is in fact hung)",
                               text=f"{decision.text} First tell whether it is hung: two dumps of each process "
                                    "taken some seconds apart do (tpudoctor hang on the VM takes them); no command "
                                    "that stops or replaces anything is given on one snapshot.")


def _absent_workers(workers: dict[str, dict[str, Any]]) -> list[ProcessState]:
    """A worker without a training process is GONE; one that sent no report is UNKNOWN."""
    absent = []
    for worker, info in workers.items():
        status = info.get("status")
        if status not in ("no_process", "no_report"):
            continue
        gone = status == "no_process"
        absent.append(ProcessState(
            worker=worker, pid=0, host=info.get("host") or "", thread="", rule=None, frame=None, signature="",
            stack=[], category=(Category.GONE if gone else Category.UNKNOWN).value,
            detail="no training process runs on this worker" if gone else f"sent no report: {info.get('why') or '?'}",
            progress="gone" if gone else "unknown",
            progress_why="no training process" if gone else "no report from this worker"))
    return absent
