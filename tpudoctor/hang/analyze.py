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
import shlex
from collections.abc import Collection, Iterable
from typing import Any

from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Severity, Status, Target
from tpudoctor.hang.classify import ONE_SNAPSHOT, process_state
from tpudoctor.hang.digest import HangDigest, worker_of_host
from tpudoctor.hang.model import ProcessCapture
from tpudoctor.hang.report import Decision, HangReport, ProcessState, RootCause, StackGroup
from tpudoctor.hang.rule import Category, HangRule

PROGRESS = "HANG-001"
STACKS_READABLE = "HANG-002"
PYSPY_INSTALLED = "HANG-003"
PROCESSES_STAYED = "HANG-004"
MEGASCALE_DIGEST = "HANG-005"
SAME_PROGRAM = "HANG-006"
CAUSE_ORDER = (Category.GONE, Category.DEBUGGER, Category.LOCK, Category.BUSY, Category.DATA, Category.CHECKPOINT,
               Category.IO, Category.COMPILING, Category.SLEEPING, Category.NATIVE, Category.UNKNOWN,
               Category.RUNNING)
"""Which kind of place explains a hang best, when several groups stand apart from the waiting ones."""
FIX_CODE = {Category.DEBUGGER, Category.LOCK, Category.BUSY, Category.SLEEPING}
DOCS = "https://github.com/benfred/py-spy"


def analyze(captures: Iterable[ProcessCapture], *, target: Target, host: str, started_at: _dt.datetime,
            interval_s: float, samples: int, digests: Iterable[HangDigest] = (),
            rules: list[type[HangRule]] | None = None, workers: dict[str, dict[str, Any]] | None = None,
            worker_problems: Iterable[Finding] = (), environment: dict[str, Any] | None = None,
            disabled_plugins: Collection[str] = ()) -> HangReport:
    """``workers`` (a pod): worker -> {status: reported | no_report | no_process, host, source}. ``rules``
    default to the registered ones less ``disabled_plugins`` (the run's ``disable_plugins`` setting)."""
    from tpudoctor import __version__
    from tpudoctor.hang.rule_registry import load_rules

    captures = list(captures)
    rules = rules if rules is not None else list(load_rules(disabled=disabled_plugins).values())
    states = [process_state(c, rules) for c in captures]
    workers = dict(workers or {})
    states += _absent_workers(workers)
    digests = list(digests)
    groups = group_states(states)
    verdict, why, confidence = job_verdict(states, groups)
    if verdict == "progressing":
        for group in groups:
            group.odd_one_out = False
    report = HangReport(verdict=verdict, verdict_why=why, confidence=confidence, target=target, host=host,
                        started_at=started_at, interval_s=interval_s, samples=samples, processes=states,
                        groups=groups, findings=[], digests=digests, captures=captures, workers=workers,
                        tool_version=__version__, environment=dict(environment or {}))
    report.steps_per_s = _job_rate(states)
    if verdict in ("hung", "unknown"):
        report.root_cause = root_cause(states, groups, digests, workers)
        if report.root_cause is not None and verdict == "hung":
            report.decision = decide(report.root_cause, report)
        elif report.root_cause is not None and why == ONE_SNAPSHOT:
            report.decision = _from_snapshots(decide(report.root_cause, report))
    report.findings = findings(report, captures, list(worker_problems) + plugin_problem_findings(rules))
    return report


def _from_snapshots(decision: Decision) -> Decision:
    """One dump per process shows where each stands, not that it stays there: one level less sure."""
    lower = {"high": "medium", "medium": "low", "low": "low"}[decision.confidence]
    return dataclasses.replace(decision, confidence=lower,
                               why=f"{decision.why} (from one snapshot per process: if the job is in fact hung)")


# -- groups and the verdict -------------------------------------------------------------------------
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


def group_states(states: list[ProcessState]) -> list[StackGroup]:
    """Processes at the same Python frames in the same kind of place. Where only some of them had native
    frames taken (``--native auto`` takes one per place), the others take their category: the same Python
    frames sit on the same native ones."""
    by_signature: dict[str, list[ProcessState]] = {}
    for state in states:
        by_signature.setdefault(state.signature, []).append(state)
    for signature, same in by_signature.items():
        informed = [s for s in same if s.native]
        if not signature or not informed or len(informed) == len(same):
            continue
        categories = [s.category for s in informed]
        category = max(set(categories), key=categories.count)
        for state in same:
            if not state.native and state.category != category:
                state.detail = (f"{state.detail}; " if state.detail else "") + \
                    f"{Category(category).label} as the native frames of pid {informed[0].pid} show"
                state.category = category
    by_key: dict[tuple[str, str], list[ProcessState]] = {}
    for state in states:
        by_key.setdefault((state.category, state.signature), []).append(state)
    groups = [StackGroup(category=cat, signature=sig, members=[(s.worker, s.pid) for s in members],
                         stack=members[0].stack, thread=members[0].thread)
              for (cat, sig), members in by_key.items()]
    waiting = sum(len(g.members) for g in groups if Category(g.category).waits_for_others)
    for group in groups:
        group.odd_one_out = bool(waiting) and not Category(group.category).waits_for_others
    groups.sort(key=lambda g: (g.odd_one_out is False, -len(g.members) if g.odd_one_out is False else len(g.members)))
    return groups


def job_verdict(states: list[ProcessState], groups: list[StackGroup]) -> tuple[str, str, str]:
    if not states:
        return "no_process", "no training process was found", "high"
    moving = [s for s in states if s.progress == "moving"]
    frozen = [s for s in states if s.progress in ("frozen", "gone")]
    by_log = [s for s in moving if s.steps_per_s is not None or "step counter" in s.progress_why]
    if moving and not frozen:
        rate = _job_rate(states)
        if by_log:
            return ("progressing", f"step counters moved ({rate:.2f} steps/s)" if rate else "step counters moved",
                    "high")
        return "progressing", f"the stacks of {len(moving)} of {len(states)} processes moved between samples", \
            "medium" if len(moving) == len(states) else "low"
    if frozen and not moving:
        strong = [s for s in frozen if "did not run" in s.progress_why or "no step logged" in s.progress_why
                  or s.progress == "gone"]
        return ("hung", f"{len(frozen)} of {len(states)} processes did not move: {frozen[0].progress_why}",
                "high" if strong else "medium")
    if frozen and moving:
        return ("unknown", f"{len(moving)} process(es) moved while {len(frozen)} did not "
                           f"({_label(frozen[0])}: {frozen[0].progress_why})", "low")
    if states and all(s.progress_why == ONE_SNAPSHOT for s in states):
        return "unknown", ONE_SNAPSHOT, "low"
    deadlocked = [s for s in states if s.category == Category.LOCK.value and s.detail.startswith("deadlock")]
    if deadlocked and not moving:
        return "hung", f"{_label(deadlocked[0])}: {deadlocked[0].detail}", "high"
    if any(g.odd_one_out for g in groups):
        return ("hung", "nothing moved, and the stacks have the shape of a hang: some processes wait in the "
                        "collective for others that stand elsewhere", "medium")
    return "unknown", f"cannot tell whether the job moves: {states[0].progress_why}", "low"


def _job_rate(states: list[ProcessState]) -> float | None:
    rates = sorted(s.steps_per_s for s in states if s.steps_per_s)
    return rates[len(rates) // 2] if rates else None


def _label(state: ProcessState) -> str:
    return state.label


# -- the root cause ---------------------------------------------------------------------------------
def root_cause(states: list[ProcessState], groups: list[StackGroup], digests: list[HangDigest],
               workers: dict[str, dict[str, Any]]) -> RootCause | None:
    if not states:
        return None
    by_key = {(s.worker, s.pid): s for s in states}
    waiting = [g for g in groups if Category(g.category).waits_for_others]
    causes = [g for g in groups if not Category(g.category).waits_for_others]
    digest = _decisive_digest(digests)
    if causes:
        culprit = min(causes, key=lambda g: (CAUSE_ORDER.index(Category(g.category)), len(g.members)))
        return _cause(culprit, [s for g in waiting for s in _members(g, by_key)], by_key, states, digest)
    if len(waiting) > 1:
        signatures = {g.signature for g in waiting}
        smallest = min(waiting, key=lambda g: len(g.members))
        if len(signatures) > 1:
            return _different_programs(smallest, waiting, by_key, states)
        device = [g for g in waiting if g.category == Category.DEVICE.value]
        if device and len(device[0].members) < sum(len(g.members) for g in waiting) / 2:
            return _device_stuck(device[0], waiting, by_key, states, digest,
                                 why="its native frames wait for the device while the others wait in the collective")
    if not waiting:
        return None
    whole = waiting[0]
    behind = _behind(states)
    if digest is not None and digest.cause in ("bad_tpu_chip", "bad_sparse_core_chip", "inconsistent_program",
                                               "different_module", "fingerprint_mismatch", "networking",
                                               "data_input_stall", "unknown"):
        return _from_digest(digest, whole, states, workers)
    if behind:
        group = StackGroup(category=Category.DEVICE.value, signature=behind[0].signature,
                           members=[(s.worker, s.pid) for s in behind], stack=behind[0].stack, thread=behind[0].thread)
        return _device_stuck(group, waiting, by_key, states, digest,
                             why=f"it logged step {behind[0].last_step:g} while the others reached "
                                 f"{max(s.last_step for s in states if s.last_step is not None):g}")
    return _no_odd_one_out(waiting, states, digest)


def _members(group: StackGroup, by_key: dict) -> list[ProcessState]:
    return [by_key[m] for m in group.members if m in by_key]


def _workers_of(states: Iterable[ProcessState]) -> list[str]:
    from tpudoctor.pod.worker_ids import natural_key

    return sorted({s.worker for s in states if s.worker is not None}, key=natural_key)


def _who(states: list[ProcessState]) -> str:
    """``worker 5 (pid 1234)``, ``workers 3, 7``, ``pid 6454``, ``pids 1, 2``."""
    from tpudoctor.pod.worker_ids import describe_workers

    workers = _workers_of(states)
    pids = [str(s.pid) for s in states if s.pid]
    if workers:
        label = f"worker {workers[0]}" if len(workers) == 1 else f"workers {describe_workers(workers, limit=8)}"
        if len(workers) == 1 and len(pids) == 1:
            label += f" (pid {pids[0]})"
        return label
    return f"pid {pids[0]}" if len(pids) == 1 else f"pids {', '.join(pids[:8])}" + (" ..." if len(pids) > 8 else "")


def _count(states: list[ProcessState]) -> str:
    workers = _workers_of(states)
    if workers:
        return f"{len(workers)} other worker{'s' if len(workers) != 1 else ''}"
    return f"{len(states)} other process{'es' if len(states) != 1 else ''}"


def _count_wait(states: list[ProcessState]) -> str:
    """``1 other worker waits``, ``3 other processes wait``."""
    count = _count(states)
    return f"{count} {'waits' if count.startswith('1 ') else 'wait'}"


def _since(states: list[ProcessState]) -> _dt.datetime | None:
    stamps = [s.last_step_at for s in states if s.last_step_at is not None]
    return max(stamps) if stamps else None


def _where(state: ProcessState) -> str:
    if state.frame is None:
        return ""
    code = f" `{state.frame.code}`" if state.frame.code else ""
    return f" at {state.frame.function} ({state.frame.where}){code}"


def _cause(group: StackGroup, waiting: list[ProcessState], by_key: dict, states: list[ProcessState],
           digest: HangDigest | None) -> RootCause:
    members = _members(group, by_key)
    first = members[0]
    category = Category(group.category)
    words = {Category.DATA: "stands in its data loader", Category.CHECKPOINT: "stands in a checkpoint write",
             Category.LOCK: "waits for a lock", Category.BUSY: "spins in a busy loop",
             Category.DEBUGGER: "is stopped in a debugger", Category.IO: "waits on I/O",
             Category.COMPILING: "is compiling", Category.SLEEPING: "sleeps or waits in Python",
             Category.NATIVE: "waits inside a native call", Category.GONE: "has no training process",
             Category.UNKNOWN: "could not be inspected", Category.RUNNING: "runs Python"}[category]
    if first.context and category is not Category(first.context):
        words += f" (in its {Category(first.context).label.split(' ', 1)[-1]} code)" if first.context in (
            "data", "checkpoint") else ""
    headline = f"{_who(members)} {words}{_where(first)}"
    if waiting:
        kinds = sorted({Category(s.category).label for s in waiting})
        headline += f"; {_count_wait(waiting)} for it ({' / '.join(kinds)})"
    evidence: dict[str, Any] = {"category": category.value, "rule": first.rule}
    if digest is not None:
        evidence["megascale_digest"] = {"cause": digest.cause, "culprit_hosts": digest.culprit_hosts}
    return RootCause(category=category.value, headline=headline, members=group.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame, detail=first.detail,
                     waiting=len(waiting), waiting_workers=_workers_of(waiting), stalled_since=_since(states),
                     evidence=evidence)


def _different_programs(smallest: StackGroup, waiting: list[StackGroup], by_key: dict,
                        states: list[ProcessState]) -> RootCause:
    members = _members(smallest, by_key)
    others = [s for g in waiting if g is not smallest for s in _members(g, by_key)]
    first, other = members[0], others[0]
    headline = (f"{_who(members)} waits{_where(first)} while {_count_wait(others)}{_where(other)}: "
                "they run different programs, so their collectives never match")
    return RootCause(category="inconsistent_program", headline=headline, members=smallest.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame,
                     detail="different jitted programs (or program fingerprints) across processes",
                     waiting=len(others), waiting_workers=_workers_of(others), stalled_since=_since(states),
                     evidence={"signatures": sorted({g.signature for g in waiting})[:4]})


def _device_stuck(group: StackGroup, waiting: list[StackGroup], by_key: dict, states: list[ProcessState],
                  digest: HangDigest | None, *, why: str) -> RootCause:
    members = _members(group, by_key) or [s for s in states if (s.worker, s.pid) in set(group.members)]
    keys = set(group.members)
    others = [s for s in states if (s.worker, s.pid) not in keys]
    first = members[0]
    headline = (f"{_who(members)} does not finish its device work{_where(first)}; {_count_wait(others)} for it "
                f"({why})")
    return RootCause(category="device_stuck", headline=headline, members=group.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame, detail=why,
                     waiting=len(others), waiting_workers=_workers_of(others), stalled_since=_since(states),
                     evidence={"why": why})


def _no_odd_one_out(waiting: list[StackGroup], states: list[ProcessState], digest: HangDigest | None) -> RootCause:
    first = next(s for s in states if s.category in (g.category for g in waiting))
    busiest = max((s for s in states if s.cpu_percent is not None), key=lambda s: s.cpu_percent, default=None)
    evidence: dict[str, Any] = {"cpu_percent": {s.label: s.cpu_percent for s in states if s.cpu_percent is not None}}
    headline = (f"all {len(states)} processes wait {Category(first.category).label.split(' ', 1)[1]}"
                f"{_where(first)}, and none stands anywhere else: the device work does not finish, "
                "with no software cause in sight")
    if busiest is not None and busiest.cpu_percent and busiest.cpu_percent > 50 and len(states) > 1:
        evidence["busiest"] = busiest.label
        headline += f" ({busiest.label} keeps a CPU core busy: on a CPU backend that is the computation itself)"
    hosts = sorted({s.host for s in states if s.host})
    return RootCause(category="no_odd_one_out", headline=headline, members=[(s.worker, s.pid) for s in states],
                     hosts=hosts, frame=first.frame, detail="every process waits on the device; none is elsewhere",
                     waiting=len(states), waiting_workers=_workers_of(states), stalled_since=_since(states),
                     evidence=evidence)


def _behind(states: list[ProcessState]) -> list[ProcessState]:
    """The processes that logged fewer steps than all the others (when the others agree)."""
    stepped = [s for s in states if s.last_step is not None]
    if len(stepped) < 2:
        return []
    top = max(s.last_step for s in stepped)
    behind = [s for s in stepped if s.last_step < top]
    return behind if behind and len(behind) < len(stepped) / 2 else []


def _decisive_digest(digests: list[HangDigest]) -> HangDigest | None:
    full = [d for d in digests if d.kind in ("digest", "unrecoverable")]
    return full[-1] if full else None


def _from_digest(digest: HangDigest, whole: StackGroup, states: list[ProcessState],
                 workers: dict[str, dict[str, Any]]) -> RootCause:
    known = {info.get("host"): w for w, info in workers.items() if info.get("host")}
    known.update({s.host: s.worker for s in states if s.host and s.worker is not None})
    hosts = digest.culprit_hosts or digest.nonzero_pc_hosts
    culprit_workers = [w for w in (worker_of_host(h, known) for h in hosts) if w is not None]
    members = [(s.worker, s.pid) for s in states if s.host in hosts or (s.worker in culprit_workers)]
    others = [s for s in states if (s.worker, s.pid) not in set(members)]
    category = {"bad_tpu_chip": "bad_chip", "bad_sparse_core_chip": "bad_chip", "networking": "networking",
                "data_input_stall": "data", "unknown": "digest_unknown"}.get(digest.cause or "", "inconsistent_program")
    names = ", ".join(hosts) or "no host"
    headline = f"the Megascale hang digest says {digest.cause or 'unknown cause'}: {names}"
    if culprit_workers:
        headline += f" (worker{'s' if len(culprit_workers) > 1 else ''} {', '.join(culprit_workers)})"
    if digest.cause in ("bad_tpu_chip", "bad_sparse_core_chip"):
        pcs = {h: digest.program_counters.get(h) for h in hosts if h in digest.program_counters}
        if pcs and all(_zero(pc) for pc in pcs.values()):
            category = "data"
            headline += "; its program counter is 0: it waits on input (its stack tells where)"
    first = states[0] if states else None
    return RootCause(category=category, headline=headline, members=members, hosts=hosts,
                     frame=first.frame if first else None, detail=digest.headline, waiting=len(others),
                     waiting_workers=_workers_of(others), stalled_since=digest.logged_at or _since(states),
                     evidence={"megascale_digest": {"cause": digest.cause, "culprit_hosts": hosts,
                                                    "program_counters": digest.program_counters,
                                                    "fingerprints": digest.fingerprints,
                                                    "source": f"{digest.source}:{digest.line_no}"}})


def _zero(pc: str | None) -> bool:
    try:
        return pc is not None and int(pc, 0) == 0
    except ValueError:
        return False


# -- the decision -----------------------------------------------------------------------------------
def decide(cause: RootCause, report: HangReport) -> Decision:
    t = report.target
    culprit_states = [s for s in report.processes if (s.worker, s.pid) in set(cause.members)]
    category = cause.category
    frame = f"{cause.frame.function} ({cause.frame.where})" if cause.frame else "the frame above"
    if category in {c.value for c in FIX_CODE} or category == "inconsistent_program":
        why = {"lock": "a thread waits for a lock that is never released: a deadlock, or a lock held across "
                       "blocking work",
               "debugger": "a breakpoint left in the code waits for input nobody can type on a pod",
               "busy": "a loop that does not end, in the job's own code",
               "sleeping": "the training loop sleeps or waits for something that does not come",
               "inconsistent_program": "processes run different programs, so their collectives never match"}[category]
        commands = [_pyspy_line(culprit_states, report, locals_=category == "lock")]
        text = f"Fix the code at {frame}: {cause.detail}."
        if category == "inconsistent_program":
            text = ("Make every process run the same jitted program: the same shapes, static arguments and code "
                    "path on every worker (a condition on process_index before a collective is the usual cause). "
                    "Dump the HLO on every worker and compare the fingerprints.")
            commands = ["export XLA_FLAGS=--xla_dump_to=/tmp/xla_dump  # on every worker, then restart the job",
                        "ls /tmp/xla_dump | grep -c after_optimizations  # compare across workers"]
        elif category == "lock":
            text += " Do not hold a lock across blocking work (I/O, a collective), and take locks in one order."
        commands.append(_kill_line(report))  # the job does not recover by itself: stop it, fix, start again
        return Decision("FIX CODE", "high" if category in ("debugger", "lock") else "medium", why, text,
                        [c for c in commands if c])
    if category in ("device_stuck", "no_odd_one_out", "bad_chip"):
        hosts = cause.hosts or [report.host]
        workers = cause.waiting_workers if category == "no_odd_one_out" else _workers_of(culprit_states)
        confidence = "high" if category == "bad_chip" and len(report.digests) > 1 else "medium"
        why = {"device_stuck": "the device work of one host does not finish while the others wait for it, and no "
                               "software cause shows in its stacks",
               "no_odd_one_out": "every process waits on the device and none stands anywhere else: no software "
                                 "cause shows in the stacks",
               "bad_chip": "the Megascale digest names bad TPU chips on this host"}[category]
        text = ("Restart the job once: if the same host hangs again in device work, report it as faulty (All "
                "Capacity mode; the repair takes 3-14 days), or delete and recreate the TPU (or its queued "
                "resource) to get another host. Report only after ruling out software.")
        duty = _duty_cycles(report, workers)
        if duty and max(duty) < 5.0:
            confidence = "low"
            why += (f"; but tpu-info shows the chips idle ({max(duty):g}% duty cycle at most): they wait for "
                    "something (a peer, the network, the host) rather than run a program that does not end")
        elif duty and min(duty) >= 90.0:
            why += f"; tpu-info shows the chips busy ({min(duty):g}-{max(duty):g}% duty cycle) while nothing moves"
        description = f"tpudoctor hang: device work does not finish on {', '.join(hosts)}"
        commands = [_kill_line(report), gcloud.report_host_as_faulty(t.tpu, t.zone, t.project, description),
                    gcloud.tpu_vm("delete", t.tpu, t.zone, t.project),
                    gcloud.tpu_vm_create({"name": t.tpu, "zone": t.zone, "project": t.project}),
                    gcloud.queued_resource("delete", None, t.zone, t.project, "--force")]
        if workers and category == "device_stuck":
            text = f"Worker{'s' if len(workers) > 1 else ''} {', '.join(workers)}: " + text
        return Decision("REPLACE HOST", confidence, why, text, [c for c in commands if c])
    why = {"data": "a read in the input pipeline does not return: storage or the network stalled",
           "checkpoint": "a checkpoint write does not return: storage stalled",
           "io": "a network or storage call does not return",
           "gone": "a process of the job is gone, and the others wait for it for ever",
           "networking": "the Megascale digest names a network link",
           "compiling": "one process compiles while the others wait: it compiles a program they already have",
           "native": "a process waits inside a native call that no frame names",
           "unknown": "a process could not be inspected, and the others wait",
           "running": "a process runs Python while the others wait",
           "digest_unknown": "Megascale saw the hang but could not tell its cause"}.get(category, "a transient stall")
    text = ("Restart the job (SIGKILL: JAX processes trap SIGTERM), then check that it moves. If it stalls again "
            "at the same place, it is not transient: fix what that frame waits for.")
    if category == "checkpoint":
        text += (" A checkpoint wrapped in a collective used as a barrier trips the hang threshold when storage is "
                 "slow: save asynchronously, with fewer and larger files (Orbax), and use "
                 "jax.experimental.multihost_utils.sync_global_devices or the distributed client's "
                 "wait_at_barrier around it.")
    elif category == "data":
        text += " Check that every worker reads its input source (permissions, throttling, a dead prefetch thread)."
    elif category == "gone":
        text += " Read the logs of the worker whose process is gone: it crashed or was killed first."
    elif category == "compiling":
        text += " Shapes or static arguments differ on that worker; make them equal or warm the cache."
    confidence = "medium" if category in ("data", "checkpoint", "io", "gone") else "low"
    commands = [_kill_line(report), _pyspy_line(culprit_states, report)]
    if category == "gone" and t.tpu:
        commands.append(f"tpudoctor check --tpu {shlex.quote(t.tpu)} --zone {t.zone or 'ZONE'} "
                        f"--workers {','.join(_workers_of(culprit_states)) or 'N'} --step 4")
    commands.append(_recheck_line(report))
    return Decision("RESTART", confidence, why, text, [c for c in commands if c])


def _duty_cycles(report: HangReport, workers: list[str]) -> list[float]:
    """The duty cycles tpu-info gave for these workers' chips (this host's when not a pod)."""
    if report.is_pod:
        found = [v for w in workers for v in (report.workers.get(w, {}).get("duty_cycle_percent") or {}).values()]
    else:
        found = list(((report.environment.get("tpu_info") or {}).get("duty_cycle_percent") or {}).values())
    return [float(v) for v in found]


def _pids_by_worker(report: HangReport) -> dict[str | None, list[int]]:
    found: dict[str | None, list[int]] = {}
    for s in report.processes:
        if s.pid:
            found.setdefault(s.worker, []).append(s.pid)
    return found


def _kill_line(report: HangReport) -> str:
    by_worker = _pids_by_worker(report)
    t = report.target
    if report.is_pod and t.tpu:
        pattern = _process_pattern(report)
        command = f"sudo pkill -KILL -f {shlex.quote(pattern)}" if pattern else "sudo pkill -KILL -f python"
        return gcloud.tpu_vm("ssh", t.tpu, t.zone, t.project, "--worker=all", "--command", shlex.quote(command))
    pids = [str(p) for ps in by_worker.values() for p in ps]
    return f"kill -KILL {' '.join(pids)}  # JAX processes trap SIGTERM" if pids else ""


def _process_pattern(report: HangReport) -> str | None:
    """What every training process's command line has: the script or module after the interpreter."""
    cmdlines = [c.cmdline for c in report.captures if c.cmdline]
    if not cmdlines:
        return None
    args = cmdlines[0].split()
    for i, arg in enumerate(args[1:], start=1):
        if arg == "-m" and i + 1 < len(args):
            return args[i + 1]
        if arg.endswith(".py"):
            return arg.rsplit("/", 1)[-1]
    return None


def _pyspy_line(states: list[ProcessState], report: HangReport, *, locals_: bool = False) -> str:
    state = next((s for s in states if s.pid), None)
    if state is None:
        return ""
    flags = " --locals" if locals_ else ""
    line = f"py-spy dump --pid {state.pid}{flags}"
    t = report.target
    if report.is_pod and t.tpu and state.worker is not None:
        return gcloud.tpu_vm("ssh", t.tpu, t.zone, t.project, f"--worker={state.worker}", "--command",
                             shlex.quote(f"sudo {line}"))
    return line + ("  # --locals prints variables: read before sharing" if locals_ else "")


def _recheck_line(report: HangReport) -> str:
    t = report.target
    if report.is_pod and t.tpu:
        return f"tpudoctor hang --tpu {shlex.quote(t.tpu)} --zone {t.zone or 'ZONE'} --all-workers"
    return "tpudoctor hang"


# -- findings ---------------------------------------------------------------------------------------
def findings(report: HangReport, captures: list[ProcessCapture], worker_problems: list[Finding]) -> list[Finding]:
    found = [_progress_finding(report)]
    found += _capture_findings(captures, report)
    found.append(_digest_finding(report))
    if len(report.processes) > 1:
        found.append(_program_finding(report))
    return found + worker_problems


def plugin_problem_findings(rules: Iterable[type[HangRule]]) -> list[Finding]:
    """An ERROR finding for each hang rule plugin that could not be loaded, naming it."""
    from tpudoctor.plugins import plugin_problem_of

    return [problem.finding(rule.id, FindingKind.HANG) for rule in rules
            if (problem := plugin_problem_of(rule)) is not None]


def _finding(fid: str, title: str, status: Status, message: str, *, severity: Severity = Severity.MEDIUM,
             evidence: dict | None = None, remediation: Remediation | None = None, scope: Scope | None = None,
             skip_reason: str | None = None) -> Finding:
    return Finding(id=fid, step=None, title=title, status=status, message=message, severity=severity,
                   evidence=dict(evidence or {}), remediation=remediation, scope=scope or Scope(),
                   skip_reason=skip_reason, kind=FindingKind.HANG)


def _scope_of(members: list[tuple[str | None, int]], hosts: list[str]) -> Scope:
    workers = [w for w, _ in members if w is not None]
    return Scope.of(workers=workers, hosts=hosts if not workers else ())


def _progress_finding(report: HangReport) -> Finding:
    title = "The job makes progress"
    if report.verdict == "progressing":
        rate = f" at {report.steps_per_s:.2f} steps/s" if report.steps_per_s else ""
        return _finding(PROGRESS, title, Status.PASS, f"the job moves{rate}: {report.verdict_why}",
                        severity=Severity.INFO, evidence={"confidence": report.confidence})
    if report.verdict == "no_process":
        return _finding(PROGRESS, title, Status.FAIL,
                        "no training process found on this VM: no process holds a TPU device, and no Python process "
                        "has JAX, torch_xla or TensorFlow loaded", severity=Severity.HIGH,
                        remediation=Remediation(text="Run tpudoctor hang where the job runs, or name its processes.",
                                                commands=("ps -ef | grep python", "tpudoctor hang --pid PID")))
    cause, decision = report.root_cause, report.decision
    evidence: dict[str, Any] = {"confidence": report.confidence, "verdict_why": report.verdict_why}
    if report.verdict == "unknown":
        message = report.verdict_why
        if cause is not None:
            message += f". If it is stuck: {cause.headline}"
        if report.from_stack_dumps:
            remediation = Remediation(
                text="Take a second dump of each process some seconds after the first and give both (a stack that "
                     "did not change is frozen), or run tpudoctor hang on the VM while the job runs.",
                commands=("py-spy dump --pid PID > later/worker-N.txt", "tpudoctor hang --stacks first/ --stacks later/"))
        else:
            remediation = Remediation(
                text="Give the job's log (--log-file) or a longer --interval so its step counter tells.",
                commands=("tpudoctor hang --interval 30s --log-file /path/to/train.log",))
        return _finding(PROGRESS, title, Status.WARN, message, evidence=evidence, remediation=remediation)
    message = cause.headline if cause else report.verdict_why
    if cause is not None and cause.stalled_since is not None:
        ago = (report.started_at - cause.stalled_since).total_seconds()
        message += f"; no step since {cause.stalled_since.astimezone().strftime('%H:%M:%S')} ({max(ago, 0):.0f}s)"
    if cause is not None:
        evidence.update({"root_cause": cause.category, "detail": cause.detail, "waiting": cause.waiting})
        if cause.frame is not None:
            evidence["frame"] = f"{cause.frame.function} ({cause.frame.where})"
            if cause.frame.code:
                evidence["code"] = cause.frame.code
        evidence.update(cause.evidence)
    remediation = None
    if decision is not None:
        evidence.update({"decision": decision.action, "decision_confidence": decision.confidence,
                         "decision_why": decision.why})
        remediation = Remediation(text=f"{decision.action}: {decision.text}", commands=tuple(decision.commands),
                                  docs_url=DOCS)
    scope = _scope_of(cause.members, cause.hosts) if cause else Scope()
    return _finding(PROGRESS, "The job is hung" if report.verdict == "hung" else title, Status.FAIL, message,
                    severity=Severity.CRITICAL, evidence=evidence, remediation=remediation, scope=scope)


def _capture_findings(captures: list[ProcessCapture], report: HangReport) -> list[Finding]:
    by_kind: dict[str, list[ProcessCapture]] = {}
    for capture in captures:
        if capture.failure is not None:
            by_kind.setdefault(capture.failure.kind, []).append(capture)
    found = []
    traced = [c for c in captures if c.samples]
    denied = by_kind.get("ptrace_denied", []) + by_kind.get("not_python", []) + by_kind.get("timeout", []) + \
        by_kind.get("error", [])
    if denied:
        first = denied[0]
        found.append(_finding(
            STACKS_READABLE, "The processes' stacks can be read", Status.ERROR,
            f"{first.failure.message}" + (f" (and {len(denied) - 1} more)" if len(denied) > 1 else "")
            + f": {first.failure.detail.splitlines()[-1] if first.failure.detail else ''}".rstrip(": "),
            severity=Severity.HIGH, scope=_scope_of([(c.worker, c.pid) for c in denied], []),
            evidence={"pids": [c.pid for c in denied], "kinds": sorted({c.failure.kind for c in denied})},
            remediation=_ptrace_fix(report) if "ptrace_denied" in by_kind else Remediation(
                text="Run py-spy on the process by hand and read its error.",
                commands=(f"py-spy dump --pid {first.pid}",))))
    elif captures and not by_kind.get("pyspy_missing"):
        threads = sum(len(c.samples[-1].threads) for c in traced)
        found.append(_finding(STACKS_READABLE, "The processes' stacks can be read", Status.PASS,
                              f"stacks of {len(traced)} process(es), {threads} thread(s)", severity=Severity.INFO))
    missing = by_kind.get("pyspy_missing", [])
    if missing:
        found.append(_finding(
            PYSPY_INSTALLED, "py-spy is installed", Status.ERROR,
            "py-spy is not installed where tpudoctor runs: no stack was taken; the verdict rests on the logs only",
            severity=Severity.HIGH, scope=_scope_of([(c.worker, c.pid) for c in missing], []),
            remediation=Remediation(text="Install py-spy (it is a tpudoctor dependency; a partial install lacks it).",
                                    commands=("pip install py-spy",))))
    exited = by_kind.get("exited", [])
    if exited:
        found.append(_finding(
            PROCESSES_STAYED, "The processes stayed up while their stacks were taken", Status.WARN,
            f"{_who([_as_state(c) for c in exited])} exited while its stacks were taken",
            scope=_scope_of([(c.worker, c.pid) for c in exited], []),
            evidence={"pids": [c.pid for c in exited], "detail": exited[0].failure.detail[-300:]}))
    return found


def _as_state(capture: ProcessCapture) -> ProcessState:
    return ProcessState(worker=capture.worker, pid=capture.pid, host=capture.host, category="gone", rule=None,
                        frame=None, thread="", detail="", progress="gone", progress_why="", signature="", stack=[])


def _ptrace_fix(report: HangReport) -> Remediation:
    scope = report.environment.get("ptrace_scope")
    commands = ['sudo env "PATH=$PATH" tpudoctor hang']
    if scope not in (None, 0):
        commands.append("sudo sysctl kernel.yama.ptrace_scope=0  # or run as root; scope now "
                        f"{scope}")
    commands.append("# GKE / Docker: add the capability to the container that runs tpudoctor: "
                    "securityContext: {capabilities: {add: [SYS_PTRACE]}}  (docker run --cap-add SYS_PTRACE)")
    return Remediation(text="py-spy needs the right to trace the job's processes: run tpudoctor as root (or as the "
                            "job's user with kernel.yama.ptrace_scope=0), and in a container grant CAP_SYS_PTRACE.",
                       commands=tuple(commands), docs_url="https://github.com/benfred/py-spy#when-do-you-need-to-run-as-sudo")


def _digest_finding(report: HangReport) -> Finding:
    title = "No Megascale hang digest in the logs"
    digests = [d for d in report.digests if d.kind in ("digest", "unrecoverable")]
    timeouts = [d for d in report.digests if d.kind == "timed_out"]
    if not digests and not timeouts:
        sources = report.environment.get("log_sources") or []
        return _finding(MEGASCALE_DIGEST, title, Status.PASS,
                        f"none in {len(sources)} log source(s)" if sources else "no log was read",
                        severity=Severity.INFO, evidence={"sources": sources[:20]})
    if not digests:
        last = timeouts[-1]
        return _finding(MEGASCALE_DIGEST, "Megascale reported a hang", Status.FAIL,
                        f"{last.headline} ({last.source}:{last.line_no}); the coordinator's digest (worker 0 of slice "
                        "0) says why", severity=Severity.HIGH, evidence={"timed_out": [d.to_dict() for d in timeouts[-3:]]})
    last = digests[-1]
    hosts = last.culprit_hosts or last.nonzero_pc_hosts
    message = f"Megascale: {last.cause or 'cause unknown'}" + (f"; culprit hosts {', '.join(hosts)}" if hosts else "")
    message += f" ({last.source}:{last.line_no})"
    return _finding(MEGASCALE_DIGEST, "Megascale reported a hang", Status.FAIL, message, severity=Severity.HIGH,
                    evidence={"digest": {k: v for k, v in last.to_dict().items() if k != "text"},
                              "count": len(digests)},
                    scope=Scope.of(hosts=hosts))


def _program_finding(report: HangReport) -> Finding:
    title = "Every process runs the same program"
    cause = report.root_cause
    digests = [d for d in report.digests if d.cause in ("inconsistent_program", "different_module",
                                                        "fingerprint_mismatch")]
    if cause is not None and cause.category == "inconsistent_program":
        return _finding(SAME_PROGRAM, title, Status.FAIL, cause.headline, severity=Severity.HIGH,
                        scope=_scope_of(cause.members, cause.hosts), evidence=cause.evidence)
    if digests:
        return _finding(SAME_PROGRAM, title, Status.FAIL, f"Megascale: {digests[-1].cause}: {digests[-1].headline}",
                        severity=Severity.HIGH, scope=Scope.of(hosts=digests[-1].culprit_hosts))
    waiting = {g.signature for g in report.groups if Category(g.category).waits_for_others}
    if len(waiting) <= 1:
        return _finding(SAME_PROGRAM, title, Status.PASS, "the waiting processes stand at the same line",
                        severity=Severity.INFO)
    return _finding(SAME_PROGRAM, title, Status.WARN, f"the waiting processes stand at {len(waiting)} different places",
                    evidence={"signatures": sorted(waiting)[:4]})
