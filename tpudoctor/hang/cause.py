"""The odd one out: what the processes wait for, and the root cause that names it (with who and where)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

from tpudoctor.hang.digest import HangDigest, worker_of_host
from tpudoctor.hang.report import ProcessState, RootCause, StackGroup
from tpudoctor.hang.rule import Category

CAUSE_ORDER = (Category.GONE, Category.DEBUGGER, Category.LOCK, Category.BUSY, Category.DATA, Category.CHECKPOINT,
               Category.IO, Category.COMPILING, Category.SLEEPING, Category.NATIVE, Category.UNKNOWN,
               Category.RUNNING)
"""Which kind of place explains a hang best, when several groups stand apart from the waiting ones."""


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


def workers_of(states: Iterable[ProcessState]) -> list[str]:
    from tpudoctor.pod.worker_ids import natural_key

    return sorted({s.worker for s in states if s.worker is not None}, key=natural_key)


def who(states: list[ProcessState]) -> str:
    """``worker 5 (pid 1234)``, ``workers 3, 7``, ``pid 6454``, ``pids 1, 2``."""
    from tpudoctor.pod.worker_ids import describe_workers

    workers = workers_of(states)
    pids = [str(s.pid) for s in states if s.pid]
    if workers:
        label = f"worker {workers[0]}" if len(workers) == 1 else f"workers {describe_workers(workers, limit=8)}"
        if len(workers) == 1 and len(pids) == 1:
            label += f" (pid {pids[0]})"
        return label
    return f"pid {pids[0]}" if len(pids) == 1 else f"pids {', '.join(pids[:8])}" + (" ..." if len(pids) > 8 else "")


def _count(states: list[ProcessState]) -> str:
    workers = workers_of(states)
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
    headline = f"{who(members)} {words}{_where(first)}"
    if waiting:
        kinds = sorted({Category(s.category).label for s in waiting})
        headline += f"; {_count_wait(waiting)} for it ({' / '.join(kinds)})"
    evidence: dict[str, Any] = {"category": category.value, "rule": first.rule}
    if digest is not None:
        evidence["megascale_digest"] = {"cause": digest.cause, "culprit_hosts": digest.culprit_hosts}
    return RootCause(category=category.value, headline=headline, members=group.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame, detail=first.detail,
                     waiting=len(waiting), waiting_workers=workers_of(waiting), stalled_since=_since(states),
                     evidence=evidence)


def _different_programs(smallest: StackGroup, waiting: list[StackGroup], by_key: dict,
                        states: list[ProcessState]) -> RootCause:
    members = _members(smallest, by_key)
    others = [s for g in waiting if g is not smallest for s in _members(g, by_key)]
    first, other = members[0], others[0]
    headline = (f"{who(members)} waits{_where(first)} while {_count_wait(others)}{_where(other)}: "
                "they run different programs, so their collectives never match")
    return RootCause(category="inconsistent_program", headline=headline, members=smallest.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame,
                     detail="different jitted programs (or program fingerprints) across processes",
                     waiting=len(others), waiting_workers=workers_of(others), stalled_since=_since(states),
                     evidence={"signatures": sorted({g.signature for g in waiting})[:4]})


def _device_stuck(group: StackGroup, waiting: list[StackGroup], by_key: dict, states: list[ProcessState],
                  digest: HangDigest | None, *, why: str) -> RootCause:
    members = _members(group, by_key) or [s for s in states if (s.worker, s.pid) in set(group.members)]
    keys = set(group.members)
    others = [s for s in states if (s.worker, s.pid) not in keys]
    first = members[0]
    headline = (f"{who(members)} does not finish its device work{_where(first)}; {_count_wait(others)} for it "
                f"({why})")
    return RootCause(category="device_stuck", headline=headline, members=group.members,
                     hosts=sorted({s.host for s in members if s.host}), frame=first.frame, detail=why,
                     waiting=len(others), waiting_workers=workers_of(others), stalled_since=_since(states),
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
                     waiting=len(states), waiting_workers=workers_of(states), stalled_since=_since(states),
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
                     waiting_workers=workers_of(others), stalled_since=digest.logged_at or _since(states),
                     evidence={"megascale_digest": {"cause": digest.cause, "culprit_hosts": hosts,
                                                    "program_counters": digest.program_counters,
                                                    "fingerprints": digest.fingerprints,
                                                    "source": f"{digest.source}:{digest.line_no}"}})


def _zero(pc: str | None) -> bool:
    try:
        return pc is not None and int(pc, 0) == 0
    except ValueError:
        return False
