"""A worker's check report from text: a worker's stdout (with login banners before it) or a stored file."""

from __future__ import annotations

import json
from typing import Any

from tpudoctor.errors import InputError
from tpudoctor.findings import SCHEMA_VERSION, Report, upgrade_check_report_v1


def report_from_output(text: str, source: str) -> tuple[Report, dict[str, Any]]:
    """The check report in a worker's stdout. Lines before it (a login banner, a motd, a shell profile's
    echo) are skipped: the report is the first JSON object that starts a line and is a check report."""
    document = document_from_output(text, source, kind="check", what="check report")
    return report_from_document(document, source), document


def document_from_output(text: str, source: str, *, kind: str, what: str) -> dict[str, Any]:
    """The first JSON object in ``text`` that starts a line and has this ``kind``."""
    decoder = json.JSONDecoder()
    start = 0
    while True:
        at = text.find("{", start)
        if at < 0:
            raise InputError(f"{source}: no {what} in the output")
        if at == 0 or text[at - 1] == "\n":
            try:
                document, _end = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                document = None
            if isinstance(document, dict) and document.get("kind") == kind:
                return document
        start = at + 1


def report_from_bytes(data: bytes, source: str) -> tuple[Report, dict[str, Any]]:
    from tpudoctor.report_file import parse_document

    document = parse_document(data, source, **_CHECK_REPORT)
    return _report(document, source), document


def report_from_document(document: dict[str, Any], source: str) -> Report:
    """Validated against the check report schema (1.x upgraded first), as ``load_check_report`` does."""
    from tpudoctor.report_file import check_document

    if isinstance(document, dict) and "workers" in document and "slice" in document:
        raise InputError(f"{source} is already a merged report", hint="merge the workers' own reports")
    return _report(check_document(document, source, **_CHECK_REPORT), source)


_CHECK_REPORT: dict[str, Any] = {"what": "check report", "schema": "check_report", "schema_version": SCHEMA_VERSION,
                 "upgrades": {"1": upgrade_check_report_v1}, "kind": "check",
                 "reads": "merge reads the check reports the workers wrote (tpudoctor check --format json)"}


def _report(document: dict[str, Any], source: str) -> Report:
    try:
        return Report.from_dict(document)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # the schema is looser than the model
        raise InputError(f"{source} is not a valid check report: {type(exc).__name__}: {exc}") from None
