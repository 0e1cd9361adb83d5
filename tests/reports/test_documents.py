"""The document a renderer formats is prepared once, before any renderer: scrubbed, redacted with --redact,
validated against its schema; a document tpudoctor made that its schema refuses is exit 3, not a traceback."""

from __future__ import annotations

import copy
import json

import pytest
from test_redact import leaky_report

from tpudoctor.documents import (
    InvalidDocumentError,
    check_document,
    merged_document,
    validated,
)
from tpudoctor.exitcodes import ExitCode
from tpudoctor.findings import Target
from tpudoctor.pod.merge import WorkerOutcome, merge_outcomes
from tpudoctor.rendering import render


def test_a_check_document_is_scrubbed_always_and_redacted_on_request():
    plain = json.dumps(check_document(leaky_report(), redact=False))
    assert "secret-token-value" not in plain and "acme-prod-42" in plain
    redacted = check_document(leaky_report(), redact=True)
    assert redacted["redacted"] is True and "acme-prod-42" not in json.dumps(redacted)


def test_every_check_format_is_made_from_the_one_prepared_report():
    shown = check_document(leaky_report(), redact=True)
    for fmt in ("text", "json", "markdown", "html", "junit"):
        out = render(shown, fmt)
        assert "acme-prod-42" not in out and "acme-training-data" not in out and "ya29." not in out, fmt


def _merged(report_doc):
    from tpudoctor.findings import Report

    outcomes = [WorkerOutcome(worker=w, report=Report.from_dict(report_doc), document=copy.deepcopy(report_doc),
                              source=f"{w}.json") for w in ("0", "1")]
    return merge_outcomes(outcomes, target=Target(project="acme-prod-42", tpu="pod"), source="run/")


def test_a_merged_document_redacts_every_workers_report_with_one_set_of_placeholders():
    worker_doc = leaky_report().to_dict()
    document = merged_document(_merged(worker_doc), redact=True)
    text = json.dumps(document)
    assert "acme-prod-42" not in text and "acme-training-data" not in text
    assert document["target"]["project"] == "<project-1>"
    assert {w["report"]["target"]["project"] for w in document["workers"].values()} == {"<project-1>"}
    out = render(document, "markdown")
    assert "acme-prod-42" not in out


def test_without_redact_a_workers_report_stays_as_that_worker_wrote_it():
    worker_doc = leaky_report().to_dict()
    document = merged_document(_merged(worker_doc), redact=False)
    assert document["workers"]["0"]["report"] == worker_doc
    assert "acme-prod-42" in json.dumps(document["target"])


def test_a_document_its_schema_refuses_is_an_internal_error_naming_where():
    document = leaky_report().to_dict()
    document["results"][0]["status"] = "MAYBE"
    with pytest.raises(InvalidDocumentError, match="results/0/status") as caught:
        validated(document, "check_report")
    assert caught.value.exit_code == ExitCode.INTERNAL_ERROR
