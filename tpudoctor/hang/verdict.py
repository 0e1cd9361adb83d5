"""Groups processes by where their training thread stands, and says whether the job moves (the verdict)."""

from __future__ import annotations

from collections import Counter

from tpudoctor.hang.classify import ONE_SNAPSHOT
from tpudoctor.hang.report import ProcessState, StackGroup
from tpudoctor.hang.rule import Category


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
                         stack=members[0].stack, thread=members[0].thread,
                         progress_counts=progress_counts(cat, members))
              for (cat, sig), members in by_key.items()]
    waiting = sum(len(g.members) for g in groups if Category(g.category).waits_for_others)
    for group in groups:
        group.odd_one_out = bool(waiting) and not Category(group.category).waits_for_others
    groups.sort(key=lambda g: (g.odd_one_out is False, -len(g.members) if g.odd_one_out is False else len(g.members)))
    return groups


def progress_counts(category: str, members: list[ProcessState]) -> dict[str, int]:
    """How many of ``members`` are moving, frozen, ..., by name; none for a category with no stack to judge."""
    if category in (Category.UNKNOWN.value, Category.GONE.value):
        return {}
    return dict(sorted(Counter(s.progress for s in members).items()))


def job_verdict(states: list[ProcessState], groups: list[StackGroup]) -> tuple[str, str, str]:
    if not states:
        return "no_process", "no training process was found", "high"
    moving = [s for s in states if s.progress == "moving"]
    frozen = [s for s in states if s.progress in ("frozen", "gone")]
    by_log = [s for s in moving if s.steps_per_s is not None or "step counter" in s.progress_why]
    if moving and not frozen:
        rate = job_rate(states)
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


def job_rate(states: list[ProcessState]) -> float | None:
    rates = sorted(s.steps_per_s for s in states if s.steps_per_s)
    return rates[len(rates) // 2] if rates else None


def _label(state: ProcessState) -> str:
    return state.label
