"""``tpudoctor hang``: is the job stuck, which process does it wait for, where does it stand, what to do.

Layers: ``tpudoctor.hang.capture`` takes the stacks, counters and log lines (or reads a ``--dump-dir``
back), ``tpudoctor.hang.analyze`` makes the ``HangReport`` (verdict, cause, decide, report_findings: one stage each), ``tpudoctor.reports.hang_<format>`` renders it.
``--all-workers`` / ``--workers`` run it on every worker of a slice through the one fan-out
(``tpudoctor.pod.FanOut``) and analyse the captures together (``tpudoctor.hang.pod``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from tpudoctor.commands.common import (
    add_output_flags,
    add_plugin_flag,
    add_redact_flag,
    add_target_flags,
)
from tpudoctor.commands.pod_check import add_pod_flags, wants_fanout
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import HANG_FORMATS

SETTINGS = {"project": None, "zone": None, "tpu": None, "worker": None, "since": "1h", "api_timeout": "10s",
            "format": "text", "fail_on": "fail", "disable_plugins": None}
"""The settings ``hang`` takes (flag > environment > config file > these defaults)."""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "hang",
        help="a job stopped moving: find the process the others wait for, where it stands, and what to do",
        description="Take every thread's stack of the training processes (py-spy) twice, --interval apart, with "
                    "their logs' step counters: say whether the job moves, group the processes by where they "
                    "stand, name the odd one out and its frame, and decide: RESTART, FIX CODE or REPLACE HOST. "
                    "Taking a stack pauses a process for a few milliseconds (native frames, only taken from "
                    "processes that did not move: up to about 0.2 s).",
    )
    which = parser.add_argument_group("which processes")
    which.add_argument("--pid", type=int, action="append", default=None, metavar="PID",
                       help="a training process (repeatable); default: those holding /dev/accel* or /dev/vfio/*, "
                            "else Python processes that loaded JAX, torch_xla or TensorFlow")
    sampling = parser.add_argument_group("sampling")
    sampling.add_argument("--interval", default="5s", metavar="DURATION",
                          help="time between the two samples (default 5s): stacks or step counters that move "
                               "mean progress")
    sampling.add_argument("--native", choices=("auto", "always", "never"), default="auto",
                          help="C/C++ frames too (py-spy --native): auto takes them from processes that did not "
                               "move, where they tell a collective from a device wait (default auto)")
    sampling.add_argument("--dump-timeout", default="20s", metavar="DURATION",
                          help="limit for each py-spy dump (default 20s)")
    inputs = parser.add_argument_group("logs")
    inputs.add_argument("--log-file", action="append", default=None, metavar="FILE",
                        help="the job's log (repeatable); the processes' own open logs and $TPU_LOG_DIR are read too")
    inputs.add_argument("--tz", default="UTC", metavar="ZONE",
                        help="zone of log times that print none (glog/absl): UTC (default: TPU VMs and GKE log in UTC), "
                             "local, an offset such as +05:30, or a name such as Europe/Paris")
    inputs.add_argument("--since", default=None, metavar="DURATION",
                        help="also read Megascale hang digests from Cloud Logging this far back (needs --tpu and "
                             "--project); and how old a libtpu log may be (default 1h)")
    inputs.add_argument("--api-timeout", default=None, metavar="DURATION", help="limit for each cloud API call (default 10s)")
    keep = parser.add_argument_group("raw dumps")
    keep.add_argument("--dump-dir", metavar="DIR",
                      help="keep every raw stack dump (py-spy's JSON) and capture here; with --all-workers, each "
                           "worker's report")
    keep.add_argument("--replay", metavar="DIR",
                      help="analyse a --dump-dir capture again instead of live processes")
    keep.add_argument("--stacks", nargs="+", action="append", default=None, metavar="FILE|DIR",
                      help="read stack dumps users already have instead of live processes: `py-spy dump` text "
                           "(also --native, --locals) or faulthandler dumps, a file per process or worker (a file "
                           "may hold several py-spy dumps; a folder reads its files). Give it twice (same file "
                           "names) or two dumps of the same pid, taken some seconds apart, to tell moving from hung (the same file, or a "
                           "copy of it, is one snapshot)")
    keep.add_argument("--merge", nargs="+", metavar="REPORT|DIR",
                      help="merge the JSON hang reports that the workers wrote themselves (GKE: kubectl exec ... "
                           "tpudoctor hang --format json > POD.json) into one slice-wide analysis")
    add_target_flags(parser)
    add_output_flags(parser, HANG_FORMATS)
    add_redact_flag(parser)
    add_plugin_flag(parser)
    add_pod_flags(parser, "tpudoctor hang")
    gate = parser.add_argument_group("exit status")
    gate.add_argument("--fail-on", choices=("warn", "fail"), default=None,
                      help="lowest status that exits 1 (default: fail: a hung job, a process that could not be read)")
    gate.add_argument("--exit-zero", action="store_true", help="always exit 0 unless tpudoctor itself breaks")
    parser.set_defaults(handler=run, settings_spec=SETTINGS)


def run(args: argparse.Namespace, settings) -> ExitCode:
    import time

    from tpudoctor import config
    from tpudoctor.commands.common import gate_for, input_paths
    from tpudoctor.errors import UsageError
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import check_output, write_text

    target = settings.target()  # every name checked before it reaches gcloud or an API path
    interval_s = config.parse_duration_s(args.interval)
    if config.parse_duration_s(args.dump_timeout) <= 0:
        raise UsageError("--dump-timeout must be positive")
    bad_pids = [pid for pid in args.pid or () if pid <= 0]
    if bad_pids:
        raise UsageError(f"--pid {bad_pids[0]}: not a valid process id (a process id is a whole number from 1 up)",
                         hint="list the job's processes with: ps -ef | grep python")
    if args.replay and args.pid:
        raise UsageError("--replay reads a saved capture; --pid names live processes: give one of them")
    if args.stacks and (args.replay or args.pid or args.merge or wants_fanout(args)):
        raise UsageError("--stacks reads dumps already taken: it takes no --pid, --replay, --merge or --all-workers")
    if args.merge and (args.replay or args.pid or wants_fanout(args)):
        raise UsageError("--merge reads the workers' reports: it takes no --replay, --pid or --all-workers")
    fmt = settings.format_for(HANG_FORMATS)
    check_output(args.output, inputs=input_paths(args.stacks, args.merge, [args.replay], args.log_file))
    fail_on = settings.fail_on
    started = time.monotonic()
    if args.merge:
        import datetime as _dt

        from tpudoctor.hang.pod import merge_answers, read_worker_documents

        report = merge_answers(read_worker_documents(args.merge), target=target,
                               started_at=_dt.datetime.now(_dt.timezone.utc), interval_s=interval_s,
                               source=", ".join(args.merge), digests=_cloud_digests(args, target, settings)[0],
                               disabled_plugins=settings.disable_plugins)
    elif wants_fanout(args):
        report = _fanout(args, target, interval_s, settings)
    else:
        report = _local(args, target, interval_s, settings)
        report.duration_s = time.monotonic() - started
    text = render(report, fmt, verbose=args.verbose, redact=args.redact, gate=gate_for(args, settings),
                  color=args.output in (None, "-") and sys.stdout.isatty() and not args.redact)
    write_text(args.output, text, fmt=fmt)
    return exit_code_for(_as_check_report(report), fail_on=fail_on, exit_zero=args.exit_zero)


WORKER_SETTINGS = ("worker", "format", "disable_plugins")
"""The settings each worker of a fan-out takes from here; its target, ``--since`` and API limits are its own
(the slice's Megascale digests are read once, here, not by every worker)."""
WORKER_FLAGS = ("--interval", "--native", "--dump-timeout", "--tz", "--log-file", "--replay")
"""``hang``'s own flags (not settings) that each worker takes as they were given here. Not ``--redact``: the
merge redacts the slice's report with one set of placeholders for every worker."""


def worker_argv(args: argparse.Namespace, settings, *, worker: str) -> list[str]:
    """The ``tpudoctor hang`` each worker runs (``Settings.worker_argv``): its own number, this run's choices, the
    plugins left out here too (the worker has neither our config file nor our environment), JSON on stdout."""
    return settings.worker_argv("hang", keys=WORKER_SETTINGS, args=args, flags=WORKER_FLAGS, format="json",
                                worker=worker)


def _fanout(args: argparse.Namespace, target, interval_s: float, settings):
    """Every chosen worker's capture through the one fan-out (``tpudoctor.pod.FanOut``), analysed as one slice."""
    from tpudoctor.commands.pod_check import slice_fan_out
    from tpudoctor.errors import UsageError
    from tpudoctor.hang.pod import check_document, merge_outcomes
    from tpudoctor.hang.report import DOCUMENT_KIND
    from tpudoctor.pod.fanout import WorkerCommand

    def refuse() -> None:
        if args.pid:
            raise UsageError("--pid names processes on this VM; with --all-workers each worker finds its own")

    fan = slice_fan_out(args, settings, command="hang", refuse=refuse,
                        longer_than=(interval_s, f"--interval {interval_s:g}s"))
    digests = _cloud_digests(args, target, settings)[0]
    hang = WorkerCommand("hang", lambda w: worker_argv(args, settings, worker=w), kind=DOCUMENT_KIND,
                         what="hang report", read=check_document, label=lambda w: f"worker {w}")
    return fan.run(hang, lambda outcomes: merge_outcomes(
        outcomes, target=target, started_at=fan.started_at, interval_s=interval_s, source=fan.via, digests=digests,
        disabled_plugins=settings.disable_plugins, dump_dir=args.dump_dir))


def _local(args: argparse.Namespace, target, interval_s: float, settings):
    from tpudoctor import config
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.capture import CaptureOptions, capture_live, read_dump_dir
    from tpudoctor.progress import progress

    since_s = settings.since_s
    if args.stacks:
        return _from_stack_files(args, target, settings)
    if args.replay:
        capture = read_dump_dir(args.replay)
        if args.worker not in (None, ""):
            capture.worker = str(args.worker)
            for c in capture.captures:
                c.worker = capture.worker
    else:
        options = CaptureOptions(pids=args.pid, interval_s=interval_s, native=args.native,
                                 dump_timeout_s=config.parse_duration_s(args.dump_timeout),
                                 log_files=list(args.log_file or []), worker=args.worker, since_s=since_s,
                                 dump_dir=args.dump_dir, disabled_plugins=settings.disable_plugins,
                                 tz=_zone(args.tz))
        with progress("tpudoctor hang") as update:
            capture = capture_live(options, on_progress=update)
    found, note = _cloud_digests(args, target, settings, worker=capture.worker)
    digests = list(capture.digests) + found
    environment = dict(capture.environment)
    if note:
        environment["cloud_logging"] = note
    target = dataclasses.replace(target, worker=capture.worker)
    return analyze(capture.captures, target=target, host=capture.host, started_at=capture.started_at,
                   interval_s=capture.interval_s, samples=capture.samples, digests=digests, environment=environment,
                   disabled_plugins=settings.disable_plugins)


def _from_stack_files(args: argparse.Namespace, target, settings):
    import datetime as _dt

    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.report import STACK_DUMPS_SOURCE
    from tpudoctor.hang.textdump import read_stack_dumps

    dumps = read_stack_dumps(args.stacks)
    captures = dumps.captures
    if args.worker not in (None, "") and len(captures) == 1:
        captures[0].worker = str(args.worker)
    samples = max((len(c.samples) for c in captures), default=0)
    taken = min((s.taken_at for c in captures for s in c.samples), default=_dt.datetime.now(_dt.timezone.utc))
    files = ", ".join(p for group in args.stacks for p in group)
    notes = [f"{why}: read once" for why in dumps.repeated]
    # 0.0: the dumps carry no time of their own, and their files' times are too close to tell one
    return analyze(captures, target=target, host="", started_at=taken, interval_s=dumps.interval_s or 0.0,
                   samples=samples, environment={"source": f"{STACK_DUMPS_SOURCE}: {files}"},
                   disabled_plugins=settings.disable_plugins, input_notes=notes)


def _cloud_digests(args: argparse.Namespace, target, settings, *, worker: str | None = None):
    """Megascale digests from Cloud Logging when --since is given (the flag) with a TPU and a project; and a
    note."""
    from tpudoctor.commands.common import session_for
    from tpudoctor.hang.capture import cloud_digests
    from tpudoctor.settings import FLAG

    if not (settings.source("since") == FLAG and target.project and target.tpu):
        return [], None
    session = session_for(settings, timeout_s=settings.api_timeout_s, project=target.project)
    return cloud_digests(target.project, target.zone, target.tpu, since_s=settings.since_s, session=session,
                         worker=worker)


def _as_check_report(report):
    """The findings as a check report, for the one exit-code rule every command shares."""
    from tpudoctor.findings import Report

    return Report(results=list(report.findings))


def render(report, fmt: str, *, verbose: bool = False, color: bool = False, redact: bool = False, gate=None) -> str:
    """Every format from the report's prepared document (redacted with ``redact``, validated), read back;
    ``gate``: the run's (JUnit)."""
    from tpudoctor.documents import hang_document
    from tpudoctor.rendering import render as render_document

    return render_document(hang_document(report, redact=redact), fmt, verbose=verbose, color=color,
                           **({"gate": gate} if gate is not None else {}))


def _zone(name: str):
    from tpudoctor.errors import UsageError
    from tpudoctor.logs.clock import zone

    try:
        return zone(name)
    except ValueError as exc:
        raise UsageError(f"--tz: {exc}") from None
