"""The decision: RESTART, FIX CODE or REPLACE HOST from the root cause, with how sure it is and the commands."""

from __future__ import annotations

import shlex

from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.hang.cause import workers_of
from tpudoctor.hang.report import Decision, HangReport, ProcessState, RootCause
from tpudoctor.hang.rule import Category

FIX_CODE = {Category.DEBUGGER, Category.LOCK, Category.BUSY, Category.SLEEPING}


def decide(cause: RootCause, report: HangReport) -> Decision:
    decision = _decide(cause, report)
    pids = [str(p) for ps in _pids_by_worker(report).values() for p in ps]
    if report.from_stack_dumps and report.verdict == "hung" and pids:
        decision.text += (f" Stop the job on the host(s) that wrote the dumps (there: kill -KILL {' '.join(pids)}; "
                          "the pids are those hosts', not this one's).")
    return decision


def _decide(cause: RootCause, report: HangReport) -> Decision:
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
        workers = cause.waiting_workers if category == "no_odd_one_out" else workers_of(culprit_states)
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
        commands = [_kill_line(report)]
        named = [h for h in hosts if h]
        if report.verdict == "hung" and confidence != "low":  # reporting or deleting a host needs a sure reading
            if named and len(named) == len(hosts):
                description = f"tpudoctor hang: device work does not finish on {', '.join(named)}"
                commands.append(gcloud.report_host_as_faulty(t.tpu, t.zone, t.project, description))
            else:
                text += " The stacks do not say which host this is: name it before reporting it."
            commands += [gcloud.tpu_vm("delete", t.tpu, t.zone, t.project),
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
                        f"--workers {','.join(workers_of(culprit_states)) or 'N'} --step 4")
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
    """Only for a job found hung, and never for pids read from dump files: those are the pids of the host that
    wrote the dumps (another host, or a job that is gone), not this one's."""
    if report.verdict != "hung" or report.from_stack_dumps:
        return ""
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
    if state is None or report.from_stack_dumps:  # a pid from a dump file is the pid of the host that wrote it
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
