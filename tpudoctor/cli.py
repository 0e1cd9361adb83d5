"""The ``tpudoctor`` command line.

Only argparse and the light command modules are imported here; each command imports what it
needs (rich, pandas, cloud clients, frameworks) when it runs, so ``tpudoctor --help`` stays fast
and never imports TensorFlow or JAX.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tpudoctor import __version__
from tpudoctor.commands import COMMANDS
from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode

EPILOG = """\
exit codes:
  0  nothing at or above the fail level
  1  findings (or a performance regression)
  2  usage or input error (bad flags, unreadable file, missing or mismatched baseline)
  3  internal error in tpudoctor itself
"""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # argparse takes "-08:00" for an option (it knows only -5 and -.5 as negative numbers), so
        # `--tz -08:00` failed with "expected one argument": a UTC offset is a value as well.
        self._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d{1,2}:?\d{2}$")

    def error(self, message: str) -> None:  # argparse's default exit code is 2 as well; keep the text short
        self.print_usage(sys.stderr)
        sys.stderr.write(f"tpudoctor: error: {message}\n")
        raise SystemExit(ExitCode.USAGE_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tpudoctor",
        description="Diagnose failed and slow Cloud TPU jobs (TensorFlow and JAX).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tpudoctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):  # no command (or no sub-command): the help of what was given
        getattr(args, "help_parser", parser).print_help(sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        return int(run_product(args.handler, args, _settings_for(args)))
    except TpudoctorError as exc:
        _print_error(exc.message, exc.hint)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("tpudoctor: interrupted\n")
        return 130
    except BrokenPipeError:
        return int(ExitCode.OK)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: exit 3, not a bare traceback
        import traceback

        _print_error(
            f"internal error: {type(exc).__name__}: {exc}",
            "this is a bug in tpudoctor, not a finding about your TPU; "
            "rerun with TPUDOCTOR_DEBUG=1 for the traceback and report it",
        )
        import os

        if os.environ.get("TPUDOCTOR_DEBUG"):
            traceback.print_exc()
        return int(ExitCode.INTERNAL_ERROR)


def run_product(product, args: argparse.Namespace, settings) -> int:
    """The one skeleton of every command (``product``: its ``tpudoctor.product.Product``): the flags as options,
    every output checked before the work (an ``-o`` that names an input is refused), the run, its document
    prepared once (redaction), each requested format rendered from it and written, the exit status."""
    import contextlib

    from tpudoctor.documents import prepare
    from tpudoctor.findings import Gate, exit_code_for
    from tpudoctor.output import check_output, write_text
    from tpudoctor.pod.report_store import PLACEHOLDERS, fill_placeholders, has_placeholder
    from tpudoctor.product import paths_in
    from tpudoctor.progress import progress
    from tpudoctor.rendering import render

    options = product.options_from(args, settings)
    session = getattr(options, "session", None)  # the run's Google Cloud session, where it has one: gs:// -o
    outputs = product.outputs(args, settings)
    inputs = list(options.inputs) if hasattr(options, "inputs") else product.input_paths(args)  # flag or setting
    reads = paths_in(inputs, *(getattr(args, flag, None) for flag in product.reads), getattr(options, "reads", ()))
    for path, _ in outputs:
        for placeholder in PLACEHOLDERS if product.worker_slot and path else ():
            path = path.replace(placeholder, "0")  # the folder must be usable whatever the worker fills in
        check_output(path, inputs=reads, session=session)
    redact = bool(getattr(args, "redact", False))
    fail_on = settings.fail_on if "fail_on" in settings.keys else "fail"  # a command without the setting: FAIL fails
    gate = Gate(fail_on, bool(getattr(args, "exit_zero", False)))
    with _gc_paused() if product.pause_gc else contextlib.nullcontext():
        with progress(f"tpudoctor {product.name}") as update:
            report = product.run(inputs, options, update)
        document = prepare(report, redact=redact)  # once, before any renderer: every file is made from it
        for extra_path, extra in getattr(report, "also_write", ()):  # a baseline: its own document
            write_text(extra_path, render(prepare(extra, redact=redact), "json"))
        for path, fmt in outputs:
            color = path in (None, "-") and sys.stdout.isatty() and not redact  # a redacted report is to be shared
            text = render(document, fmt, verbose=bool(getattr(args, "verbose", False)), color=color, gate=gate)
            if product.worker_slot and has_placeholder(path):
                path = fill_placeholders(path, report, session=session)
            write_text(path, text, fmt=fmt, session=session)
    if getattr(report, "note", None):
        sys.stderr.write(report.note)
    if getattr(report, "refusal", None) is not None:  # written first; the refusal to judge is an error like any
        raise report.refusal
    return int(exit_code_for(report, fail_on=gate.fail_on, exit_zero=gate.exit_zero))


def _gc_paused():
    """Cyclic GC off for the run and the rendering. In the command's own process it stays off: turned on again,
    its first pass went over every object the run left (0.02 s after ``profile analyze`` of the 57 MB GPU
    capture) just before the process ends, which frees them all at once."""
    import contextlib
    import gc

    from tpudoctor.command_process import ends_after_command

    if ends_after_command():
        gc.disable()
        return contextlib.nullcontext()
    from tpudoctor.profile.pipeline import cyclic_gc_paused

    return cyclic_gc_paused()


def _settings_for(args: argparse.Namespace):
    """The command's settings, resolved once: flag > environment > config file > default. A command that
    takes no setting does not read the config file."""
    import os

    from tpudoctor.settings import Settings

    spec = getattr(args, "settings_spec", None) or {}
    config: dict = {}
    if spec:
        from tpudoctor.config import load_config_file

        config, _path = load_config_file()
    settings = Settings.resolve(args, spec, environ=os.environ, config=config)
    if settings.disable_plugins:
        _note_unknown_plugins(settings)
    return settings


def _note_unknown_plugins(settings) -> None:
    """A plugin left out that is not installed here: a note, not an error (the same setting serves machines
    that have it), so that a misspelt name does not pass silently while the plugin still runs."""
    from tpudoctor.plugins import unknown_plugin_names

    unknown = unknown_plugin_names(settings.disable_plugins)
    if unknown:
        them = "it" if len(unknown) == 1 else "them"
        sys.stderr.write(f"tpudoctor: note: {settings.origin('disable_plugins')} {', '.join(unknown)}: not the name "
                         f"of an installed plugin, so nothing is left out for {them}\n")


def run() -> None:
    """The ``tpudoctor`` command: ``main``, then the process ends as soon as its output is flushed.

    Exit handlers run, but the interpreter does not free every module and object one by one: that
    took 0.1-0.3 s after a ``profile analyze`` (numpy, pandas, protobuf; measured by
    ``benchmarks/bench_profile_load.py``) and a command line has no use for it. Threads still
    running are not waited for. ``--help``, ``--version`` and usage errors exit the usual way."""
    from tpudoctor.command_process import mark_ends_after_command

    mark_ends_after_command()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): the output went as far as it could
            pass
    import atexit
    import os

    atexit._run_exitfuncs()
    os._exit(code)


def _print_error(message: str, hint: str | None) -> None:
    """Messages quote file names, report fields and worker output: shown, never run by the terminal."""
    from tpudoctor.reports.escape import plain

    sys.stderr.write(f"tpudoctor: error: {plain(message)}\n")
    if hint:
        sys.stderr.write(f"  hint: {plain(hint)}\n")


if __name__ == "__main__":
    run()


def settings_from_argv(argv: Sequence[str], *, environ: Mapping[str, str] | None = None,
                       config: Mapping[str, Any] | None = None):
    """What a ``tpudoctor`` command line resolves to: the inverse of ``settings.to_argv`` (a worker's view)."""
    from tpudoctor.settings import Settings

    args = build_parser().parse_args(list(argv))
    spec = getattr(args, "settings_spec", None) or {}
    return Settings.resolve(args, spec, environ={} if environ is None else environ, config=config)
