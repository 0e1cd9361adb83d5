"""Where each process stands, and whether it moved: one ``ProcessState`` per captured process.

The training thread is the main thread, unless the main thread only waits for others (``join``, an
event) while another thread runs framework code. Its Python frames, normalised (library line numbers and
the interpreter's own frames aside), are the signature processes group by. Every rule looks at the thread;
the match nearest the innermost frame wins (then the lowest rank), fallback rules only when nothing else
matched.

Progress, strongest evidence first: a step counter in the process's logs that went up (moving, with the
rate); its stack that changed between samples beyond the innermost line (moving); a step counter that did
not move for much longer than a step takes, or a training thread that did not run once between the
samples (frozen); otherwise unknown, saying what would tell.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from tpudoctor.hang.model import Frame, ProcessCapture, StackSample, ThreadStack
from tpudoctor.hang.progress import log_verdict
from tpudoctor.hang.report import ProcessState
from tpudoctor.hang.rule import Category, HangRule, Match, ThreadView, is_library

FRAMEWORK_FILES = ("/jax/", "/jaxlib/", "/torch_xla/", "/tensorflow/", "/flax/", "/optax/")
ONE_SNAPSHOT = ("one snapshot per process; take two (tpudoctor hang on the VM, or two dumps --interval apart) "
                "to tell")
WAITING_FOR_THREADS = ("Thread.join", "Event.wait", "Condition.wait", "_wait_for_tstate_lock", "pause")
BUSY_CPU_SHARE = 0.05  # of one core: a loaded machine gives a spinning thread far less than all of it
"""Of one core: a spinning thread gets less than a whole core on a loaded machine."""
STALE_STEPS = 5.0
"""A step counter that has not moved for this many step times (and the interval) is frozen."""


def training_thread(sample: StackSample) -> ThreadStack | None:
    if not sample.threads:
        return None
    main = next((t for t in sample.threads if t.name == "MainThread"), sample.threads[0])
    if main.frames and not any(w in main.frames[0].function for w in WAITING_FOR_THREADS):
        return main
    runs_framework = [t for t in sample.threads if t is not main
                      and any(any(p in f.file for p in FRAMEWORK_FILES) for f in t.frames)]
    return runs_framework[0] if runs_framework else main


def _background_only(sample: StackSample) -> bool:
    """No MainThread and every thread with frames started by ``threading``: the main thread is not in the dump."""
    if any(t.name == "MainThread" for t in sample.threads):
        return False
    with_frames = [t for t in sample.threads if python_frames(t.frames)]
    return bool(with_frames) and all(python_frames(t.frames)[-1].function in ("_bootstrap", "Thread._bootstrap")
                                     for t in with_frames)


def python_frames(frames: Iterable[Frame]) -> list[Frame]:
    return [f for f in frames if not f.native]


def native_below(sample: StackSample | None, tid: int) -> list[Frame]:
    """The native frames under a thread's innermost Python frame (py-spy merges both in ``--native``)."""
    thread = sample.thread(tid) if sample else None
    if thread is None:
        return []
    below = []
    for frame in thread.frames:
        if not frame.native:
            break
        below.append(frame)
    return below


def signature(frames: Iterable[Frame]) -> str:
    """The stack as processes group by it: user frames with their lines, library frames without."""
    parts = []
    for frame in frames:
        if frame.file.startswith("<frozen"):
            continue
        where = frame.short_file if is_library(frame) else f"{frame.short_file}:{frame.line}"
        parts.append(f"{frame.function} ({where})")
    return " <- ".join(parts)


def _outer_signature(frames: list[Frame]) -> tuple:
    """What must change for a stack to have moved: every frame but the innermost one's line."""
    return tuple((f.function, f.file, f.line if i else 0) for i, f in enumerate(frames))


def choose(matches: list[tuple[HangRule, Match]]) -> tuple[HangRule, Match] | None:
    specific = [(r, m) for r, m in matches if not r.fallback]
    pool = specific or matches
    return min(pool, key=lambda rm: (rm[1].depth, rm[0].rank)) if pool else None


def classify_thread(view: ThreadView, rules: Iterable[type[HangRule]]) -> tuple[HangRule | None, Match | None, str | None]:
    """The deciding rule and match, and the category of the nearest outer frame another rule placed."""
    matches = []
    for cls in rules:
        rule = cls()
        try:
            found = rule.match(view)
        except Exception:  # noqa: BLE001 - one broken (plugin) rule must not take the report down
            found = None
        if found is not None:
            matches.append((rule, found))
    best = choose(matches)
    if best is None:
        return None, None, None
    rule, match = best
    outer = [(r, m) for r, m in matches if not r.fallback and m.depth > match.depth and r.category != rule.category]
    context = min(outer, key=lambda rm: (rm[1].depth, rm[0].rank))[0].category.value if outer else None
    return rule, match, context


def process_state(capture: ProcessCapture, rules: list[type[HangRule]]) -> ProcessState:
    progress, why, rate, log = _progress(capture)
    cpu = _cpu_percent(capture)
    state_letter = capture.counters[-1].state if capture.counters else None
    common = dict(worker=capture.worker, pid=capture.pid, host=capture.host, progress=progress, progress_why=why,
                  last_step=log.last_step, last_step_at=log.last_logged_at, seconds_per_step=log.seconds_per_step,
                  steps_per_s=rate, cpu_percent=cpu, state=state_letter)
    if not capture.samples:
        gone = capture.failure is not None and capture.failure.kind == "exited"
        category = Category.GONE if gone else Category.UNKNOWN
        detail = capture.failure.message if capture.failure else "no stack was taken"
        return ProcessState(category=category.value, rule=None, frame=None, thread="", detail=detail, signature="",
                            stack=[], **{**common, "progress": "gone" if gone else progress})
    last = capture.samples[-1]
    thread = training_thread(last)
    if thread is None:
        return ProcessState(category=Category.UNKNOWN.value, rule=None, frame=None, thread="",
                            detail="the dump had no Python thread", signature="", stack=[], **common)
    if _background_only(last):
        return ProcessState(category=Category.UNKNOWN.value, rule=None, frame=None, thread=thread.name,
                            detail="the dump shows only threads started by threading, not the main thread (a dump "
                                   "cut short?): paste the whole dump", signature="", stack=[], **common)
    frames = python_frames(thread.frames)
    # a ``--native`` dump read from text carries its native frames inline: no separate native sample
    native = native_below(capture.native if capture.native is not None else (last if last.native else None),
                          thread.tid)
    view = ThreadView(name=thread.name, frames=tuple(frames), native_frames=tuple(native), active=thread.active,
                      busy=_busy(capture, thread, cpu), others=tuple(t for t in last.threads if t.tid != thread.tid),
                      frameworks=tuple(capture.frameworks))
    rule, match, context = classify_thread(view, rules)
    category = rule.category if rule else Category.UNKNOWN
    frame, detail = _user_frame(match, frames) if match else (None, "")
    return ProcessState(category=category.value, rule=rule.id if rule else None, frame=frame, thread=thread.name,
                        detail=detail, signature=signature(frames), stack=frames, native=native, context=context,
                        **common)


def _user_frame(match: Match, frames: list[Frame]) -> tuple[Frame | None, str]:
    """Where a person looks: the job's own frame at or outside the deciding one, when that one is in a
    library or native code (which is then named in the detail)."""
    decided = match.frame
    if decided is not None and not decided.native and not is_library(decided):
        return decided, match.detail
    start = 0 if decided is None or decided.native else next(
        (i for i, f in enumerate(frames) if f is decided or f == decided), 0)
    user = next((f for f in frames[start:] if not is_library(f)), None)
    if user is None or decided is None:
        return decided or user, match.detail
    inside = f"in {decided.function} ({decided.where})"
    return user, f"{match.detail}; {inside}" if match.detail else inside


def _thread_in(sample: StackSample, tid: int, name: str) -> ThreadStack | None:
    return sample.thread(tid) or next((t for t in sample.threads if t.name == name), None)


def _busy(capture: ProcessCapture, thread: ThreadStack, cpu_percent: float | None) -> bool:
    if len(capture.samples) < 2 or cpu_percent is None or cpu_percent < BUSY_CPU_SHARE * 100:
        return False
    seen = [_thread_in(s, thread.tid, thread.name) for s in capture.samples]
    if any(t is None or not t.active or not t.frames for t in seen):
        return False
    return len({(t.frames[0].function, t.frames[0].file) for t in seen}) == 1


def _cpu_percent(capture: ProcessCapture) -> float | None:
    if len(capture.counters) < 2:
        return None
    first, last = capture.counters[0], capture.counters[-1]
    wall = (last.taken_at - first.taken_at).total_seconds()
    return round(100.0 * (last.cpu_s - first.cpu_s) / wall, 1) if wall > 0 else None


def _progress(capture: ProcessCapture):
    """(moving | frozen | unknown, why, steps per second, the log verdict)."""
    readings = capture.steps
    half = len(readings) // 2
    log = log_verdict(readings[:half], readings[half:])
    if log.moved:
        rate = f", {log.steps_per_s:.2f} steps/s" if log.steps_per_s else ""
        return "moving", f"its log's step counter moved to {log.last_step:g}{rate} ({log.source})", log.steps_per_s, log
    if capture.failure is not None and capture.failure.kind == "exited":
        return "gone", capture.failure.message, None, log
    if capture.counters and capture.counters[-1].state in ("Z", "X"):
        return "gone", "the process has exited (a zombie not reaped by its parent)", None, log
    if capture.counters and capture.counters[-1].state in ("T", "t"):
        return "frozen", "the process is stopped (SIGSTOP or a debugger)", None, log
    samples = capture.samples
    threads = []
    if samples:
        main = training_thread(samples[-1])
        if main is not None:
            threads = [_thread_in(s, main.tid, main.name) for s in samples]
    if len(threads) >= 2 and all(threads):
        shapes = {_outer_signature(python_frames(t.frames)) for t in threads}
        if len(shapes) > 1:
            return "moving", f"its training thread's stack changed between the {len(samples)} samples", None, log
    stale = _stale(log, capture)
    if stale:
        return "frozen", stale, None, log
    ran = _thread_ran(capture, threads[-1].tid if threads and threads[-1] else None)
    if ran is False:
        span = (capture.counters[-1].taken_at - capture.counters[0].taken_at).total_seconds()
        return "frozen", f"its training thread did not run once in {span:.1f}s, and its stack did not change", None, log
    if len(samples) < 2:
        return "unknown", ONE_SNAPSHOT, None, log
    if not capture.counters:  # dumps read from text: no kernel counters, the stacks alone must tell
        return "frozen", f"the same stack in {len(samples)} dumps of the process", None, log
    why = f"the same stack in {len(samples)} samples, but the thread ran in between"
    why += ("; the log's step counter did not move either" if log.moved is False
            else "; no step counter found in its logs (give --log-file, or a longer --interval)")
    return "unknown", why, None, log


def _stale(log, capture: ProcessCapture) -> str | None:
    if log.moved is not False or log.last_logged_at is None or not capture.counters:
        return None
    now = capture.counters[-1].taken_at
    age = (now - log.last_logged_at).total_seconds()
    first = capture.counters[0].taken_at
    interval = (now - first).total_seconds()
    step = log.seconds_per_step
    limit = max(interval, STALE_STEPS * step) if step else None
    if limit is None or age < limit:
        return None
    return (f"no step logged for {age:.0f}s (last: step {log.last_step:g}; steps took {step:.2f}s) "
            f"and none during the {interval:.1f}s interval")


def _thread_ran(capture: ProcessCapture, tid: int | None) -> bool | None:
    if tid is None or len(capture.counters) < 2:
        return None
    before, after = capture.counters[0].switches.get(tid), capture.counters[-1].switches.get(tid)
    if before is None or after is None:
        return None
    return after > before


def median_seconds_per_step(states: list[ProcessState]) -> float | None:
    values = [s.seconds_per_step for s in states if s.seconds_per_step]
    return statistics.median(values) if values else None
