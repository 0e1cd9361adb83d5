"""The document a renderer formats, prepared once per run: built from the finished report, scrubbed (secrets
always, identities with ``--redact``) and validated against its schema, in that order, before any renderer.

Every command hands its finished report to ``prepare(report, redact=...)``, which picks by the report's kind
what that kind needs (the ``*_document`` functions below); ``tpudoctor.rendering.render`` then formats the
prepared document. Renderers neither redact nor validate: every format of one run is made from the same
prepared document. A document tpudoctor built that fails its own schema is a bug (exit 3), not bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.profile.compare_report import KINDS as COMPARE_KINDS
from tpudoctor.redact import (
    named_identities,
    redact_document,
    sanitize_report_dict,
    scrub_secrets_in,
)

if TYPE_CHECKING:
    from tpudoctor.bench.report import BenchReport
    from tpudoctor.findings import Report
    from tpudoctor.goodput.report import GoodputReport
    from tpudoctor.hang.report import HangReport
    from tpudoctor.profile.compare_report import CompareReport
    from tpudoctor.profile.report import ProfileReport


class HasDocument(Protocol):
    """A report that builds its own document: a merged pod report (``pod.merge.MergedReport``), which this
    module does not import (the engine runs one host; the pod sits above it)."""

    def to_dict(self) -> dict[str, Any]: ...


class InvalidDocumentError(TpudoctorError):
    exit_code = ExitCode.INTERNAL_ERROR


def validated(document: dict[str, Any], *schemas: str) -> dict[str, Any]:
    """``document`` itself, once it matches every named schema."""
    from tpudoctor.schema import validate_own

    for schema in schemas:
        try:
            validate_own(document, schema)
        except Exception as exc:
            import jsonschema  # loaded already where a document was refused

            if not isinstance(exc, jsonschema.ValidationError):
                raise
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise InvalidDocumentError(f"tpudoctor made a {schema} document its schema refuses: {where}: "
                                       f"{exc.message[:300]}", hint="please report this as a bug") from None
    return document


def prepare(report: Any, *, redact: bool) -> dict[str, Any]:
    """``report``'s document, ready for every renderer: scrubbed, redacted with ``redact`` and validated the
    way its kind (``report_kind``) needs."""
    kind = report_kind(report)
    preparer = _PREPARERS.get(kind)
    if preparer is None:
        raise InvalidDocumentError(f"tpudoctor cannot prepare a report of kind {kind!r}",
                                   hint="please report this as a bug")
    return preparer(report, redact)


def report_kind(report: Any) -> str:
    """The kind ``prepare`` dispatches on: the report's ``kind`` (goodput, bench, the comparisons), else the
    one its class stands for (check, merged, profile, hang: their classes name no kind)."""
    kind = getattr(report, "kind", None)
    if isinstance(kind, str):
        return kind
    cls = type(report)
    return _CLASS_KINDS.get(f"{cls.__module__}.{cls.__qualname__}", cls.__qualname__)


_CLASS_KINDS = {
    "tpudoctor.findings.Report": "check",
    "tpudoctor.pod.merge.MergedReport": "merged",
    "tpudoctor.profile.report.ProfileReport": "profile",
    "tpudoctor.hang.report.HangReport": "hang",
}
"""Report classes without a ``kind`` of their own, by qualified name (so ``prepare`` imports none of them)."""


def check_document(report: Report, *, redact: bool) -> dict[str, Any]:
    """A check report's document: secrets scrubbed, identities replaced with ``redact``."""
    return validated(sanitize_report_dict(report.to_dict(), redact=redact), "check_report")


def merged_document(merged: HasDocument, *, redact: bool) -> dict[str, Any]:
    """A merged pod report's document. With ``redact``, one set of placeholders across every worker's report;
    without, each worker's own report is as the tpudoctor that wrote it scrubbed it."""
    document = merged.to_dict()
    if redact:
        document = sanitize_report_dict(document, redact=True)
    else:
        workers = document.pop("workers")
        document = {**sanitize_report_dict(document, redact=False), "workers": workers}
    return validated(document, "check_report")


def profile_document(report: ProfileReport, *, redact: bool = False) -> dict[str, Any]:
    """A profile report's document; with ``redact``, the hosts it names (and any IP, bucket, project or
    e-mail in it) replaced."""
    return validated(_redacted(report.to_dict()) if redact else report.to_dict(), "profile_report",
                     "profile_diagnosis")


def goodput_document(document: dict[str, Any] | GoodputReport, *, redact: bool) -> dict[str, Any]:
    """A goodput report's document (``tpudoctor.goodput.analyze`` builds it as a dict); it quotes log lines,
    so secrets are scrubbed always."""
    scrubbed = scrub_secrets_in(_document_of(document))
    return validated(_redacted(scrubbed) if redact else scrubbed, "goodput_report")


def bench_document(document: dict[str, Any] | BenchReport, *, redact: bool) -> dict[str, Any]:
    """A bench document (a run, or the baseline made of it): secrets scrubbed always (its findings quote
    paths and versions), the host and any IP, bucket, project or e-mail replaced with ``redact``."""
    scrubbed = scrub_secrets_in(_document_of(document))
    return validated(_redacted(scrubbed) if redact else scrubbed, "bench_result")


def diag_document(report: Any, *, redact: bool) -> dict[str, Any]:
    """A diag document: secrets scrubbed always (its findings quote runtime errors), identities with ``redact``."""
    document = scrub_secrets_in(_document_of(report))
    return validated(_redacted(document) if redact else document, "diag_report")


def memory_document(report: Any, *, redact: bool) -> dict[str, Any]:
    """A memory document: secrets scrubbed always (it quotes log lines and capture paths), identities with
    ``redact``."""
    document = scrub_secrets_in(_document_of(report))
    return validated(_redacted(document) if redact else document, "memory_report")


def preflight_document(report: Any, *, redact: bool) -> dict[str, Any]:
    """A memory preflight's document: secrets scrubbed always (it quotes the compiler's error and the program's
    path and source lines), identities with ``redact``."""
    document = scrub_secrets_in(_document_of(report))
    return validated(_redacted(document) if redact else document, "memory_preflight")


def compare_document(result: dict[str, Any] | CompareReport, *, redact: bool) -> dict[str, Any]:
    """A comparison's document (of two profiles, of a profile with its history, or of two goodput reports).
    Its parts were validated as they were read; the comparison itself has no schema."""
    result = _document_of(result)
    return _redacted(result) if redact else result


def _document_of(report: Any) -> dict[str, Any]:
    return report if isinstance(report, dict) else report.to_dict()


def _redacted(document: dict[str, Any]) -> dict[str, Any]:
    return redact_document(document, **named_identities(document))


def op_trace_document(report: Any, *, redact: bool) -> dict[str, Any]:
    """An op-trace what-if document (``profile.op_trace_report``): figures and ranks, and the trace's path,
    which ``redact`` replaces like any other identity (no schema yet: the document is numbers and names)."""
    document = scrub_secrets_in(_document_of(report))
    return _redacted(document) if redact else document


def hang_document(report: HangReport, *, redact: bool = False) -> dict[str, Any]:
    """A hang report's document (its stacks were scrubbed of secrets as they were captured); with ``redact``,
    the hosts and projects it names and any IP, bucket or e-mail in it (command lines, log paths) replaced."""
    return validated(_redacted(report.to_dict()) if redact else report.to_dict(), "hang_report")


_PREPARERS: dict[str, Callable[[Any, bool], dict[str, Any]]] = {
    "check": lambda report, redact: check_document(report, redact=redact),
    "merged": lambda report, redact: merged_document(report, redact=redact),
    "profile": lambda report, redact: profile_document(report, redact=redact),
    "hang": lambda report, redact: hang_document(report, redact=redact),
    "goodput": lambda report, redact: goodput_document(report, redact=redact),
    "bench": lambda report, redact: bench_document(report, redact=redact),
    "diag": lambda report, redact: diag_document(report, redact=redact),
    "memory": lambda report, redact: memory_document(report, redact=redact),
    "memory-preflight": lambda report, redact: preflight_document(report, redact=redact),
    "pipeline_whatif": lambda report, redact: op_trace_document(report, redact=redact),
    "answer": lambda report, redact: report.to_dict(),  # a listing or an explanation: nothing of the user's in it
    **{kind: (lambda report, redact: compare_document(report, redact=redact))
       for kind in COMPARE_KINDS},
}
"""Report kind -> what prepares its document (``prepare``)."""
