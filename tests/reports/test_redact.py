from __future__ import annotations

import json
import re

from sample_reports import preempted_node_report

from tpudoctor.findings import Remediation, Report
from tpudoctor.redact import Redactor, sanitize_report_dict, scrub_secrets
from tpudoctor.schema import validate


def leaky_report() -> Report:
    report = preempted_node_report()
    cause = report.results[0]
    cause.evidence.update(
        service_account="trainer@acme-prod-42.iam.gserviceaccount.com",
        network_endpoints=["10.128.0.7", "fe80:0:0:0:200:f8ff:fe21:67cf"],
        log_line="GET https://storage.googleapis.com/b/acme-training-data?alt=json Authorization: Bearer ya29.a0AfB_byC-secret-token-value",
        data="gs://acme-training-data/train/part-0001.tfrecord",
    )
    cause.remediation = Remediation(
        "Grant the role.",
        ("gcloud storage buckets add-iam-policy-binding gs://acme-training-data "
         "--member serviceAccount:trainer@acme-prod-42.iam.gserviceaccount.com --role roles/storage.objectViewer",),
    )
    report.target.project = "acme-prod-42"
    return report


def test_tokens_are_scrubbed_even_without_redact():
    doc = sanitize_report_dict(leaky_report().to_dict(), redact=False)
    text = json.dumps(doc)
    assert "ya29." not in text and "secret-token-value" not in text
    assert "acme-prod-42" in text  # identities stay unless --redact
    assert scrub_secrets('{"access_token": "abc.def"}') == '{"access_token": "<secret>"}'


def test_redact_removes_projects_accounts_ips_buckets_and_host_consistently():
    doc = sanitize_report_dict(leaky_report().to_dict(), redact=True)
    validate(doc, "check_report")
    text = json.dumps(doc)
    for leaked in ("acme-prod-42", "trainer@", "10.128.0.7", "fe80:0:0:0:200:f8ff:fe21:67cf",
                   "acme-training-data", "builder", "ya29."):
        assert leaked not in text, leaked
    assert doc["redacted"] is True and doc["host"] == "<host>"
    assert doc["target"]["project"] == "<project-1>"
    ev = doc["results"][0]["evidence"]
    assert ev["data"] == "gs://<bucket-1>/train/part-0001.tfrecord"
    command = doc["results"][0]["remediation"]["commands"][0]
    assert "gs://<bucket-1>" in command and "serviceAccount:<email-1>" in command
    assert doc["summary"]["root_cause"] == "NODE-001"  # structure survives


def test_placeholders_do_not_eat_longer_names():
    r = Redactor(projects=["acme"])
    assert r.text("projects acme and acme-dev") == "projects <project-1> and acme-dev"


def test_profile_and_compare_reports_can_be_redacted(shared_data, tmp_path, capsys):
    from tpudoctor import cli

    capture = shared_data / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"
    for fmt in ("json", "markdown", "html", "text"):
        out = tmp_path / f"report.{fmt}"
        assert cli.main(["profile", "analyze", str(capture), "--format", fmt, "--redact", "-o", str(out)]) == 0
        text = out.read_text()
        assert "34.83.195.179" not in text, fmt
        if fmt == "json":
            doc = json.loads(text)
            validate(doc, "profile_diagnosis")
            assert doc["summary"]["hosts"][0]["hostname"] == "<host-1>" and doc["redacted"] is True
        if fmt == "html":
            assert "&lt;host-1&gt;" in text and "<host-1>" not in text
        if fmt == "markdown":  # written as entities outside code spans, so Markdown shows it as written
            assert "&lt;host-1&gt;" in text and "<host-1>" not in re.sub(r"`[^`]*`", "", text)
    assert cli.main(["compare", str(tmp_path / "report.json"), str(tmp_path / "report.json"), "--redact",
                     "--format", "markdown"]) == 0
    assert "34.83.195.179" not in capsys.readouterr().out


def test_a_document_is_redacted_before_any_renderer_with_every_id_it_names():
    from tpudoctor.redact import named_identities, redact_document

    doc = {"schema_version": "2.2", "kind": "tpudoctor.goodput",
           "summary": {"hosts": [{"hostname": "worker-a.example.com"}], "failed_hosts": {"10.1.2.3": "gone"}},
           "notes": ["copy from gs://acme-data/x to 10.0.0.1 by ops@acme.com, slow on worker-a.example.com"],
           "cloud": {"project": "acme-prod", "filter": 'logName="projects/acme-prod/logs/tpu"'}}
    out = redact_document(doc, **named_identities(doc))
    assert out["schema_version"] == "2.2" and out["kind"] == "tpudoctor.goodput" and out["redacted"] is True
    assert out["summary"] == {"hosts": [{"hostname": "<host-1>"}], "failed_hosts": {"<ip-1>": "gone"}}
    assert out["notes"] == ["copy from gs://<bucket-1>/x to <ip-2> by <email-1>, slow on <host-1>"]
    assert out["cloud"] == {"project": "<project-1>", "filter": 'logName="projects/<project-1>/logs/tpu"'}
    assert doc["cloud"]["project"] == "acme-prod"  # the report itself is left as it was


def test_redacted_markdown_shows_placeholders_as_text_outside_code_and_as_written_inside(capsys):
    from tpudoctor import cli

    assert cli.main(["profile", "analyze", "tests/fixtures/profiles/multihost_slow_host", "--format", "markdown",
                     "--redact"]) == 1
    out = capsys.readouterr().out
    prose = re.sub(r"`[^`]*`", "", out)
    assert "&lt;host-3&gt; reached the step's first collective last" in prose
    assert "<host-" not in prose and "| &lt;host-3&gt; | host-bound |" in out


def test_a_dotted_four_part_version_is_not_an_ip_address():
    redactor = Redactor()
    text = ("libtpu 0.0.42.1 with jax 0.10.2; tensorflow==2.15.0.1; worker 10.128.0.7:8470 and peer (34.56.78.90), "
            "build v1.2.3.4, oid 1.3.6.1.4.1")
    assert redactor.text(text) == ("libtpu 0.0.42.1 with jax 0.10.2; tensorflow==2.15.0.1; worker <ip-1>:8470 and "
                                   "peer (<ip-2>), build v1.2.3.4, oid 1.3.6.1.4.1")
