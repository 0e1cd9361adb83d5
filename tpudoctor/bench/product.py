"""``tpudoctor bench`` as a product: ``run`` times the reference model in fresh processes, gates the figures
against a baseline (``gate``) and returns the ``BenchReport`` (its document built by ``document``).
``BenchOptions.from_args`` turns the flags into options and refuses bad ones before any output is opened."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tpudoctor.bench import DEFAULT_CONFIRM_RUNS, gate, steady
from tpudoctor.bench import document as bench_document
from tpudoctor.bench.report import BenchReport
from tpudoctor.errors import InputError, UsageError
from tpudoctor.exitcodes import ExitCode

if TYPE_CHECKING:
    from tpudoctor.bench.launch import RunRequest


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    model: str
    framework: str = "tensorflow"
    steps: int = 20
    repeats: int = 8
    batch_size: int | None = None
    accelerator: str = "auto"
    data_dir: str | None = None
    profile: str | None = None
    inject_step_delay: float = 0.0
    timeout_s: float = 1800.0
    save_baseline: str | None = None
    baseline: str | None = None
    tolerance: float = 0.05
    """The allowed drop of the median, a fraction."""
    alpha: float = 0.002
    baseline_runs: int = 3
    confirm_runs: int = DEFAULT_CONFIRM_RUNS
    allow_mismatch: bool = False
    failure_junit: str | None = None
    """Where a run that produced no result writes its one-case JUnit (``--junit``)."""

    @classmethod
    def from_args(cls, args: Any, settings: Any = None) -> BenchOptions:
        """The flags as options; a flag that cannot be right is a ``UsageError``."""
        from tpudoctor import config
        from tpudoctor.output import check_output

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
        check_output(args.save_baseline)  # before minutes of benchmarking; it may replace --baseline: saving does
        return cls(model=args.model, framework=args.framework, steps=args.steps, repeats=args.repeats,
                   batch_size=args.batch_size, accelerator=args.accelerator, data_dir=args.data_dir,
                   profile=args.profile, inject_step_delay=args.inject_step_delay, timeout_s=timeout_s,
                   save_baseline=args.save_baseline, baseline=args.baseline, tolerance=tolerance, alpha=args.alpha,
                   baseline_runs=args.baseline_runs, confirm_runs=args.confirm_runs,
                   allow_mismatch=args.allow_mismatch, failure_junit=args.junit)


def run(inputs: Sequence[str], options: BenchOptions, progress: Callable[[str], None] | None = None
        ) -> BenchReport:
    """Time the model (``options.baseline_runs`` processes for a baseline), gate it against the baseline
    ``inputs`` names (none: no gate), and return the report with its findings set."""
    baseline_path = inputs[0] if inputs else None
    options = dataclasses.replace(options, baseline=baseline_path)
    baseline = _checked_baseline(options)
    doc, result = _measure(options, progress)
    if baseline is not None:
        doc["comparison"] = _comparison(options, baseline, doc, progress)
    bench_document.with_findings(doc)
    saves = bool(options.save_baseline and result["loss_dropped"])  # a model that does not learn is no reference
    return BenchReport(doc, baseline_document=bench_document.as_baseline(doc) if saves else None,
                       baseline_path=options.save_baseline, note=_loss_note(options, result))


def _request(options: BenchOptions) -> RunRequest:
    """One reference run of these options, with the windows steady-state detection may drop as warm-up."""
    from tpudoctor.bench.launch import RunRequest

    return RunRequest(model=options.model, framework=options.framework, steps=options.steps,
                      repeats=options.repeats + steady.warmup_allowance(options.repeats),
                      batch_size=options.batch_size, accelerator=options.accelerator, data_dir=options.data_dir,
                      profile_dir=options.profile, step_delay_ms=options.inject_step_delay)


def _checked_baseline(options: BenchOptions) -> dict[str, Any] | None:
    """The baseline, read; refuse a run that cannot be compared or cannot start before spending minutes on it."""
    from tpudoctor.bench.launch import framework_installed

    baseline = bench_document.load_baseline(options.baseline) if options.baseline else None
    if baseline is not None and baseline["key"]["model"] != options.model and not options.allow_mismatch:
        raise InputError(  # refuse before spending minutes on a run that cannot be compared
            f"baseline {options.baseline} is for model {baseline['key']['model']!r}, not {options.model!r}",
            hint="pass the matching --model, another --baseline, or --allow-mismatch",
        )
    if options.framework == "jax":
        from tpudoctor.reference_models.jax_models import JAX_MODELS

        if options.model not in JAX_MODELS:
            raise UsageError(f"the JAX variant has {', '.join(JAX_MODELS)}, not {options.model}")
        if options.data_dir:
            raise UsageError("--data-dir (TFRecord input) works with --framework tensorflow only")
        if not framework_installed("jax"):
            raise UsageError("JAX is not installed in this Python", hint="pip install 'tpudoctor[jax]'")
    elif not framework_installed("tensorflow"):
        raise UsageError("TensorFlow is not installed in this Python; the reference models need it",
                         hint="pip install 'tpudoctor[tf]' (on a TPU VM use the TPU runtime's TensorFlow)")
    return baseline


def _measure(options: BenchOptions, progress: Callable[[str], None] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document of this run (for a baseline, of the process with the middle median) and its run result."""
    from tpudoctor import __version__

    warmup_allowed = steady.warmup_allowance(options.repeats)
    request = _request(options)
    outcome = _run_with_progress(request, options.timeout_s, update=progress)
    result = outcome.result
    if result is None:
        _report_failed_run(outcome, options.failure_junit, options.model)
    timed_beyond_repeats = max(0, len(result["examples_per_s"]) - options.repeats)  # never keep fewer than --repeats
    doc = bench_document.build_document(result, tool_version=__version__,
                                        warmup_windows_allowed=min(warmup_allowed, timed_beyond_repeats))
    if options.save_baseline and options.baseline_runs > 1:
        docs = [doc]
        for number in range(2, options.baseline_runs + 1):
            more = _run_with_progress(request, options.timeout_s, update=progress,
                                      note=f"baseline: process {number} of {options.baseline_runs}")
            if more.result is None:
                _report_failed_run(more, options.failure_junit, options.model)
            docs.append(bench_document.build_document(more.result, tool_version=__version__,
                                                      warmup_windows_allowed=min(warmup_allowed, timed_beyond_repeats)))
        doc = bench_document.middle_process(docs)
        result = {**result, "loss_dropped": doc["measurement"]["loss_dropped"]}

    return doc, result


def _comparison(options: BenchOptions, baseline: dict[str, Any], doc: dict[str, Any],
                progress: Callable[[str], None] | None) -> dict[str, Any]:
    """The gate's verdict against the baseline, confirmed on fresh runs when it suspects a regression."""
    from tpudoctor import __version__

    request = _request(options)
    mismatches = gate.key_mismatches(baseline["key"], doc["key"])
    if mismatches and not options.allow_mismatch:
        lines = "; ".join(f"{m.field}: baseline {m.baseline!r}, this run {m.current!r}" for m in mismatches)
        raise InputError(f"baseline {options.baseline} was recorded under a different key, so the numbers are "
                         f"not comparable: {lines}",
                         hint="record a baseline for this configuration (--save-baseline), or pass --allow-mismatch")
    try:
        baseline_steady = steady.measured_steady_state(baseline["measurement"], min_kept=gate.MIN_WINDOWS)
        current_steady = steady.measured_steady_state(doc["measurement"], min_kept=gate.MIN_WINDOWS)
        busy_baseline = bench_document.busy_share(baseline["measurement"])
        verdict = gate.compare(baseline_steady.kept, current_steady.kept, tolerance=options.tolerance, alpha=options.alpha,
                               busy_share_baseline=busy_baseline,
                               busy_share_current=bench_document.busy_share(doc["measurement"]))
        confirmations: list[tuple[dict[str, Any], Any]] = []
        while gate.needs_confirmation(verdict) and len(confirmations) < options.confirm_runs:
            note = (f"{verdict.change_pct:+.1f}% vs baseline: timing a fresh run to confirm "
                    f"({len(confirmations) + 1} of {options.confirm_runs})")
            again = _run_with_progress(request, options.timeout_s, update=progress, note=note).result
            if again is None:
                break  # the confirmation run failed: judge on the runs that finished, and say so below
            again_doc = bench_document.build_document(again, tool_version=__version__,
                                                      warmup_windows_allowed=doc["measurement"]["steady_state"]
                                                      ["max_dropped_windows"])
            again_steady = steady.measured_steady_state(again_doc["measurement"], min_kept=gate.MIN_WINDOWS)
            confirmations.append((again_doc["measurement"],
                                  gate.compare(baseline_steady.kept, again_steady.kept, tolerance=options.tolerance,
                                               alpha=options.alpha, busy_share_baseline=busy_baseline,
                                               busy_share_current=bench_document.busy_share(
                                                   again_doc["measurement"]))))
            if confirmations[-1][1].ratio >= 1.0 - options.tolerance:
                break  # one run without the drop settles it: no need to time more
    except gate.GateInputError as exc:
        raise InputError(f"cannot compare with {options.baseline}: {exc}",
                         hint=f"record the baseline with --repeats {gate.MIN_WINDOWS} or more") from exc
    first, verdict = verdict, gate.confirmed(verdict, [result for _, result in confirmations])
    comparison = {
        "baseline_file": str(options.baseline),
        "baseline_key": baseline["key"],
        "baseline_created_at": baseline.get("created_at"),
        "key_mismatches": [m.to_dict() for m in mismatches],
        "allowed_mismatch": bool(mismatches),
        "gate": verdict.to_dict(),
    }
    if gate.needs_confirmation(first):
        comparison["confirmation"] = {
            "first_verdict": first.verdict,
            "runs_asked": options.confirm_runs,
            "runs": [{"samples": m["samples"], "steady_state": m["steady_state"], "gate": r.to_dict()}
                     for m, r in confirmations],
        }
    return comparison


def _loss_note(options: BenchOptions, result: dict[str, Any]) -> str | None:
    if result["loss_dropped"]:
        return None
    saved = f"; {options.save_baseline} was not written" if options.save_baseline else ""
    return (f"tpudoctor: the loss of {options.model} did not drop "
            f"({result['loss_start']:.4g} -> {result['loss_end']:.4g}); its throughput is not meaningful{saved}\n")


def _run_with_progress(request: Any, timeout_s: float, note: str | None = None,
                       update: Callable[[str], None] | None = None) -> Any:
    """One reference run in a fresh process; ``note`` says why this one (a confirmation, a baseline's next)."""
    from contextlib import nullcontext

    from tpudoctor.bench.launch import launch
    from tpudoctor.progress import progress

    plain = not sys.stderr.isatty()

    with (nullcontext(update) if update is not None else progress(f"tpudoctor bench {request.model}")) as update:
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
