"""``tpudoctor bench``: train a reference model, record throughput, and gate it against a baseline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tpudoctor.bench import DEFAULT_CONFIRM_RUNS
from tpudoctor.commands.common import add_redact_flag
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import BENCH_FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    from tpudoctor.reference_models import MODEL_NAMES  # names only; no framework is imported

    parser = sub.add_parser(
        "bench",
        help="measure a reference model's throughput; gate it against a baseline in CI",
        description=(
            "Train a reference model on synthetic data and report examples/s per timed window (compile "
            "excluded; the warm-up windows at the head, found from the windows themselves (MSER), dropped). "
            "With --baseline, exit 1 when throughput dropped beyond --tolerance and the drop is significant "
            "(one-sided Mann-Whitney U, >= 6 windows per side); a drop on a machine much noisier than the "
            "baseline's that its extra noise could explain is 'unknown' (a warning), not a regression."
        ),
    )
    run_group = parser.add_argument_group("run")
    run_group.add_argument("--model", required=True, choices=MODEL_NAMES)
    run_group.add_argument("--framework", choices=("tensorflow", "jax"), default="tensorflow",
                           help="tensorflow (default) or jax; every model runs in both")
    run_group.add_argument("--steps", type=int, default=20, metavar="N", help="steps per timed window (default 20)")
    run_group.add_argument("--repeats", type=int, default=8, metavar="K",
                           help="steady timed windows (default 8; at least 6 to save or compare a baseline); "
                                "K/2 more are timed so that the warm-up can be dropped")
    run_group.add_argument("--batch-size", type=int, default=None, metavar="B",
                           help="per-replica batch size (default: the model's); global = B x replicas")
    run_group.add_argument("--accelerator", choices=("auto", "tpu", "cpu"), default="auto",
                           help="auto uses TPUStrategy when a TPU is attached")
    run_group.add_argument("--data-dir", metavar="URI", default=None,
                           help="write the synthetic data as TFRecord here (local or gs://) and train from it")
    run_group.add_argument("--profile", metavar="LOGDIR", default=None,
                           help="capture one extra window with the framework's profiler (read with 'tpudoctor profile analyze')")
    run_group.add_argument("--inject-step-delay", type=float, default=0.0, metavar="MS",
                           help="sleep MS more in every step: a known slowdown, to test a CI gate (never with "
                                "--save-baseline)")
    run_group.add_argument("--timeout", default="30m", metavar="DURATION", help="limit for the run (default 30m)")
    gate = parser.add_argument_group("baseline")
    gate.add_argument("--save-baseline", metavar="FILE", help="write this run as a baseline file")
    gate.add_argument("--baseline", metavar="FILE", help="compare with this baseline; exit 1 on a regression")
    gate.add_argument("--tolerance", default="5%", metavar="PCT", help="allowed drop of the median (default 5%%)")
    gate.add_argument("--alpha", type=float, default=0.002, help="significance level of the U test (default 0.002)")
    gate.add_argument("--baseline-runs", type=int, default=3, metavar="N",
                      help="with --save-baseline, time N fresh processes and keep the one with the middle median "
                           "(default 3): one process can run 20%% slower than the next on the same machine")
    gate.add_argument("--confirm-runs", type=int, default=DEFAULT_CONFIRM_RUNS, metavar="N",
                      help="time a suspected regression again on up to N fresh runs before failing (default "
                           f"{DEFAULT_CONFIRM_RUNS}; the first run without the drop settles it; 0 judges on one "
                           "run): a process or a machine that was slower for a run does not fail the build")
    gate.add_argument("--allow-mismatch", action="store_true",
                      help="compare even when the baseline's key (model version, accelerator, versions, batch) differs")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=BENCH_FORMATS, default=None, help="report format (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    out.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    out.add_argument("--junit", metavar="FILE", help="also write a JUnit XML file")
    out.add_argument("--markdown-summary", metavar="FILE",
                     help="also write a Markdown summary (append it to $GITHUB_STEP_SUMMARY)")
    add_redact_flag(out)
    parser.set_defaults(handler=run, settings_spec={"format": "text"})


def render(document: dict[str, Any], fmt: str) -> str:
    from tpudoctor.rendering import render as render_document

    return render_document(document, fmt)


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor import __version__, config
    from tpudoctor.bench import document as bench_document
    from tpudoctor.bench import gate, steady
    from tpudoctor.bench.launch import RunRequest, framework_installed
    from tpudoctor.bench.report import BenchReport
    from tpudoctor.documents import prepare
    from tpudoctor.errors import InputError, UsageError
    from tpudoctor.findings import exit_code_for
    from tpudoctor.output import check_output, write_text

    for name, value in (("--steps", args.steps), ("--repeats", args.repeats), ("--batch-size", args.batch_size)):
        if value is not None and value <= 0:
            raise UsageError(f"{name} must be a positive integer, got {value}")
    if not 0 <= args.inject_step_delay < float("inf"):
        raise UsageError(f"--inject-step-delay must be a finite number of ms >= 0, got {args.inject_step_delay}")
    if args.inject_step_delay and args.save_baseline:
        raise UsageError("--inject-step-delay slows the run on purpose: such a run is never a baseline",
                         hint="drop --save-baseline, or --inject-step-delay")
    gating = bool(args.baseline or args.save_baseline)
    if gating and args.repeats < gate.MIN_WINDOWS:
        raise UsageError(f"--repeats {args.repeats} is too few to save or compare a baseline",
                         hint=f"use --repeats {gate.MIN_WINDOWS} or more; fewer windows can never reach significance")
    if args.confirm_runs < 0:
        raise UsageError(f"--confirm-runs must be 0 or more, got {args.confirm_runs}")
    if args.baseline_runs < 1:
        raise UsageError(f"--baseline-runs must be 1 or more, got {args.baseline_runs}")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha}")
    tolerance = config.parse_percent(args.tolerance) / 100.0
    timeout_s = config.parse_duration_s(args.timeout)
    if timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    fmt = settings.format_for(BENCH_FORMATS)
    for destination in (args.output, args.junit, args.markdown_summary):  # before minutes of benchmarking
        check_output(destination, inputs=[args.baseline])
    check_output(args.save_baseline)  # may replace --baseline: that is what saving a baseline means

    baseline = bench_document.load_baseline(args.baseline) if args.baseline else None
    if baseline is not None and baseline["key"]["model"] != args.model and not args.allow_mismatch:
        raise InputError(  # refuse before spending minutes on a run that cannot be compared
            f"baseline {args.baseline} is for model {baseline['key']['model']!r}, not {args.model!r}",
            hint="pass the matching --model, another --baseline, or --allow-mismatch",
        )
    if args.framework == "jax":
        from tpudoctor.reference_models.jax_models import JAX_MODELS

        if args.model not in JAX_MODELS:
            raise UsageError(f"the JAX variant has {', '.join(JAX_MODELS)}, not {args.model}")
        if args.data_dir:
            raise UsageError("--data-dir (TFRecord input) works with --framework tensorflow only")
        if not framework_installed("jax"):
            raise UsageError("JAX is not installed in this Python", hint="pip install 'tpudoctor[jax]'")
    elif not framework_installed("tensorflow"):
        raise UsageError("TensorFlow is not installed in this Python; the reference models need it",
                         hint="pip install 'tpudoctor[tf]' (on a TPU VM use the TPU runtime's TensorFlow)")

    warmup_allowed = steady.warmup_allowance(args.repeats)
    request = RunRequest(model=args.model, framework=args.framework, steps=args.steps,
                         repeats=args.repeats + warmup_allowed, batch_size=args.batch_size,
                         accelerator=args.accelerator, data_dir=args.data_dir, profile_dir=args.profile,
                         step_delay_ms=args.inject_step_delay)
    outcome = _run_with_progress(request, timeout_s)
    result = outcome.result
    if result is None:
        _report_failed_run(outcome, args.junit, args.model)
    timed_beyond_repeats = max(0, len(result["examples_per_s"]) - args.repeats)  # never keep fewer than --repeats
    doc = bench_document.build_document(result, tool_version=__version__,
                                        warmup_windows_allowed=min(warmup_allowed, timed_beyond_repeats))
    if args.save_baseline and args.baseline_runs > 1:
        docs = [doc]
        for number in range(2, args.baseline_runs + 1):
            more = _run_with_progress(request, timeout_s, note=f"baseline: process {number} of {args.baseline_runs}")
            if more.result is None:
                _report_failed_run(more, args.junit, args.model)
            docs.append(bench_document.build_document(more.result, tool_version=__version__,
                                                      warmup_windows_allowed=min(warmup_allowed, timed_beyond_repeats)))
        doc = bench_document.middle_process(docs)
        result = {**result, "loss_dropped": doc["measurement"]["loss_dropped"]}

    if baseline is not None:
        mismatches = gate.key_mismatches(baseline["key"], doc["key"])
        if mismatches and not args.allow_mismatch:
            lines = "; ".join(f"{m.field}: baseline {m.baseline!r}, this run {m.current!r}" for m in mismatches)
            raise InputError(f"baseline {args.baseline} was recorded under a different key, so the numbers are "
                             f"not comparable: {lines}",
                             hint="record a baseline for this configuration (--save-baseline), or pass --allow-mismatch")
        try:
            baseline_steady = steady.measured_steady_state(baseline["measurement"], min_kept=gate.MIN_WINDOWS)
            current_steady = steady.measured_steady_state(doc["measurement"], min_kept=gate.MIN_WINDOWS)
            busy_baseline = bench_document.busy_share(baseline["measurement"])
            verdict = gate.compare(baseline_steady.kept, current_steady.kept, tolerance=tolerance, alpha=args.alpha,
                                   busy_share_baseline=busy_baseline,
                                   busy_share_current=bench_document.busy_share(doc["measurement"]))
            confirmations = []
            while gate.needs_confirmation(verdict) and len(confirmations) < args.confirm_runs:
                note = (f"{verdict.change_pct:+.1f}% vs baseline: timing a fresh run to confirm "
                        f"({len(confirmations) + 1} of {args.confirm_runs})")
                again = _run_with_progress(request, timeout_s, note=note).result
                if again is None:
                    break  # the confirmation run failed: judge on the runs that finished, and say so below
                again_doc = bench_document.build_document(again, tool_version=__version__,
                                                          warmup_windows_allowed=doc["measurement"]["steady_state"]
                                                          ["max_dropped_windows"])
                again_steady = steady.measured_steady_state(again_doc["measurement"], min_kept=gate.MIN_WINDOWS)
                confirmations.append((again_doc["measurement"],
                                      gate.compare(baseline_steady.kept, again_steady.kept, tolerance=tolerance,
                                                   alpha=args.alpha, busy_share_baseline=busy_baseline,
                                                   busy_share_current=bench_document.busy_share(
                                                       again_doc["measurement"]))))
                if confirmations[-1][1].ratio >= 1.0 - tolerance:
                    break  # one run without the drop settles it: no need to time more
        except gate.GateInputError as exc:
            raise InputError(f"cannot compare with {args.baseline}: {exc}",
                             hint=f"record the baseline with --repeats {gate.MIN_WINDOWS} or more") from exc
        first, verdict = verdict, gate.confirmed(verdict, [result for _, result in confirmations])
        doc["comparison"] = {
            "baseline_file": str(args.baseline),
            "baseline_key": baseline["key"],
            "baseline_created_at": baseline.get("created_at"),
            "key_mismatches": [m.to_dict() for m in mismatches],
            "allowed_mismatch": bool(mismatches),
            "gate": verdict.to_dict(),
        }
        if gate.needs_confirmation(first):
            doc["comparison"]["confirmation"] = {
                "first_verdict": first.verdict,
                "runs_asked": args.confirm_runs,
                "runs": [{"samples": m["samples"], "steady_state": m["steady_state"], "gate": r.to_dict()}
                         for m, r in confirmations],
            }
    bench_document.with_findings(doc)
    report = BenchReport(doc)
    prepared = prepare(report, redact=args.redact)  # once, before any renderer: every file is made from it

    if args.save_baseline and result["loss_dropped"]:  # a model that does not learn is no reference
        baseline_doc = prepare(BenchReport(bench_document.as_baseline(doc)), redact=args.redact)
        write_text(args.save_baseline, render(baseline_doc, "json"))
    if args.junit:
        write_text(args.junit, render(prepared, "junit"))
    if args.markdown_summary:
        write_text(args.markdown_summary, render(prepared, "markdown"))
    write_text(args.output, render(prepared, fmt))
    if not result["loss_dropped"]:
        saved = f"; {args.save_baseline} was not written" if args.save_baseline else ""
        sys.stderr.write(f"tpudoctor: the loss of {args.model} did not drop "
                         f"({result['loss_start']:.4g} -> {result['loss_end']:.4g}); its throughput is not "
                         f"meaningful{saved}\n")
    return exit_code_for(report)  # a FAIL is exit 1: BENCH-001 a regression, BENCH-002 a loss that did not drop


def _run_with_progress(request: Any, timeout_s: float, note: str | None = None) -> Any:
    """One reference run in a fresh process; ``note`` says why this one (a confirmation, a baseline's next)."""
    from tpudoctor.bench.launch import launch
    from tpudoctor.progress import progress

    plain = not sys.stderr.isatty()

    with progress(f"tpudoctor bench {request.model}") as update:
        def on_event(event: dict[str, Any]) -> None:
            value = event.get("value") or {}
            key = event.get("key")
            if key == "run_start":
                device = value.get("device", {})
                message = (f"compiling {request.model} on {device.get('device_kind')} x{device.get('device_count')} "
                           f"(global batch {value.get('global_batch_size')})")
            elif key == "compile":
                message = (f"compiled in {value.get('compile_time_ms', 0):,.0f} ms; timing {request.repeats} windows "
                           f"(the warm-up among the first ones is dropped)")
            elif key == "window":
                message = (f"window {value.get('window')}/{value.get('of')}: "
                           f"{value.get('examples_per_s', 0):,.1f} examples/s, loss {value.get('loss', 0):.4g}")
            elif key == "profile":
                message = f"profile written to {value.get('logdir')}"
            else:
                return
            update(message)
            if plain:
                sys.stderr.write(f"tpudoctor bench: {message}\n")
                sys.stderr.flush()

        if note:
            update(note)
            if plain:
                sys.stderr.write(f"tpudoctor bench: {note}\n")
        update(f"starting {request.model}")
        return launch(request, timeout_s=timeout_s, on_event=on_event)


def _report_failed_run(outcome: Any, junit_path: str | None, model: str) -> None:
    """The run produced no result: say why (classified through the log catalog) and exit 1."""
    from tpudoctor.bench.failure import diagnose_output
    from tpudoctor.errors import TpudoctorError
    from tpudoctor.logdiag import cause_of

    if not outcome.started:
        why = f"could not start the reference run: {outcome.start_error}"
    elif outcome.timed_out:
        why = f"the reference run did not finish within {outcome.timeout_s:g}s and was stopped"
    elif outcome.error:
        why = f"the reference run failed: {outcome.error.get('type')}: {outcome.error.get('message', '').splitlines()[0][:300]}"
    else:
        why = f"the reference run exited with status {outcome.returncode} without a result"
    diagnoses = diagnose_output(outcome.output_tail)
    hint = None
    if diagnoses:
        first = diagnoses[0]
        why += f" [{first.id}: {first.title}]"
        hint = first.remediation.text if first.remediation else cause_of(first)
    else:
        tail = "\n".join(outcome.output_tail.splitlines()[-15:])
        sys.stderr.write(f"--- last lines of the run ---\n{tail}\n---\n")
    if junit_path:
        _write_failed_junit(junit_path, model, why)
    raise TpudoctorError(why, hint=hint, exit_code=ExitCode.FINDINGS)


def _write_failed_junit(path: str, model: str, message: str) -> None:
    import xml.etree.ElementTree as ET

    from tpudoctor.output import write_text

    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name="tpudoctor bench", tests="1", failures="0", errors="1")
    case = ET.SubElement(suite, "testcase", classname=f"tpudoctor.bench.{model}", name="reference run")
    ET.SubElement(case, "error", message=message, type="run-failed")
    ET.indent(suites)
    write_text(path, '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n")
