"""The document a renderer formats, prepared once per run: built from the finished report, scrubbed (secrets
always, identities with ``--redact``) and validated against its schema, in that order, before any renderer.

Renderers neither redact nor validate: every format of one run is made from the same prepared document.
A document tpudoctor built that fails its own schema is a bug (exit 3), not bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.redact import (
    named_identities,
    redact_document,
    sanitize_report_dict,
    scrub_secrets_in,
)

if TYPE_CHECKING:
    from tpudoctor.findings import Report
    from tpudoctor.hang.report import HangReport
    from tpudoctor.pod.merge import MergedReport
    from tpudoctor.profile.report import ProfileReport


class InvalidDocumentError(TpudoctorError):
    exit_code = ExitCode.INTERNAL_ERROR


def validated(document: dict[str, Any], *schemas: str) -> dict[str, Any]:
    """``document`` itself, once it matches every named schema."""
    import jsonschema

    from tpudoctor.schema import validate

    for schema in schemas:
        try:
            validate(document, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise InvalidDocumentError(f"tpudoctor made a {schema} document its schema refuses: {where}: "
                                       f"{exc.message[:300]}", hint="please report this as a bug") from None
    return document


def check_document(report: Report, *, redact: bool) -> dict[str, Any]:
    """A check report's document: secrets scrubbed, identities replaced with ``redact``."""
    return validated(sanitize_report_dict(report.to_dict(), redact=redact), "check_report")


def shown_check_report(report: Report, *, redact: bool) -> Report:
    """The ``Report`` the check renderers format: read back from its prepared document."""
    from tpudoctor.findings import Report

    shown = Report.from_dict(check_document(report, redact=redact))
    shown.duration_s = report.duration_s
    return shown


def merged_document(merged: MergedReport, *, redact: bool) -> dict[str, Any]:
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


def goodput_document(document: dict[str, Any], *, redact: bool) -> dict[str, Any]:
    """A goodput report's document (``tpudoctor.goodput.analyze`` builds it as a dict); it quotes log lines,
    so secrets are scrubbed always."""
    document = scrub_secrets_in(document)
    return validated(_redacted(document) if redact else document, "goodput_report")


def compare_document(result: dict[str, Any], *, redact: bool) -> dict[str, Any]:
    """A comparison's document (of two profiles, of a profile with its history, or of two goodput reports).
    Its parts were validated as they were read; the comparison itself has no schema."""
    return _redacted(result) if redact else result


def _redacted(document: dict[str, Any]) -> dict[str, Any]:
    return redact_document(document, **named_identities(document))


def hang_document(report: HangReport, *, redact: bool = False) -> dict[str, Any]:
    """A hang report's document (its stacks were scrubbed of secrets as they were captured); with ``redact``,
    the hosts and projects it names and any IP, bucket or e-mail in it (command lines, log paths) replaced."""
    return validated(_redacted(report.to_dict()) if redact else report.to_dict(), "hang_report")
