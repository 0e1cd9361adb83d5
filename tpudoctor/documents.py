"""The document a renderer formats, prepared once per run: built from the finished report, scrubbed (secrets
always, identities with ``--redact``) and validated against its schema, in that order, before any renderer.

Renderers neither redact nor validate: every format of one run is made from the same prepared document.
A document tpudoctor built that fails its own schema is a bug (exit 3), not bad input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.exitcodes import ExitCode
from tpudoctor.redact import sanitize_report_dict

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


def profile_document(report: ProfileReport) -> dict[str, Any]:
    """A profile report's document (``--redact`` is applied to the finished text by the command: see
    ``tpudoctor.redact.redact_rendered``)."""
    return validated(report.to_dict(), "profile_report", "profile_diagnosis")


def hang_document(report: HangReport) -> dict[str, Any]:
    """A hang report's document (its stacks were scrubbed of secrets as they were captured)."""
    return validated(report.to_dict(), "hang_report")
