"""The log diagnosis API other steps build on (contracts.md)."""

from tpudoctor.findings import Finding, FindingKind, Remediation, Scope, Status, Step
from tpudoctor.logdiag import (
    DIAGNOSIS_FACTS,
    cause_of,
    diagnose_text,
    load_catalog,
    parse_bytes,
    pulled_evidence,
)

OOM_THEN_WARN = """\
2024-05-01 10:00:00,001 INFO train.py starting
W0501 10:00:01.000000  4242 cloud_tpu_init.py:80] Transparent hugepages are not enabled.
Traceback (most recent call last):
  File "/home/me/train.py", line 88, in <module>
    state = train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.

Total hbm usage >= 21.05G:
    reserved        530.00M
    program          20.52G
2024-05-01 10:00:09,000 INFO exiting
"""


def test_root_cause_first_with_evidence_and_fix():
    found = diagnose_text(OOM_THEN_WARN, "train.log")
    assert [d.id for d in found] == ["hbm-oom-compile", "hugepages-disabled"]
    top = found[0]
    assert top.status is Status.FAIL and found[1].status is Status.WARN
    assert top.evidence["hbm_used_bytes"] == parse_bytes("20.54G") == round(20.54 * 2**30)
    assert top.evidence["hbm_capacity_bytes"] == round(15.48 * 2**30)
    assert top.evidence["hbm_excess_bytes"] == round(5.06 * 2**30)
    assert isinstance(top.remediation, Remediation) and top.remediation.docs_url.startswith("https://")
    facts = top.evidence
    assert facts["first_line_no"] == 6 and facts["source"] == "train.log" and facts["count"] == 1


def test_catalog_covers_research_entries():
    catalog = load_catalog()
    assert catalog.version >= 1
    assert len(catalog.signatures) >= 40


def test_a_log_finding_is_the_one_finding_type_with_the_diagnosis_facts_in_evidence():
    top, warn = diagnose_text(OOM_THEN_WARN, "train.log")
    assert isinstance(top, Finding) and top.kind is FindingKind.LOG and top.step is Step.LOGS
    assert top.id == "hbm-oom-compile" and top.title == load_catalog().get("hbm-oom-compile").title
    assert top.scope == Scope() and top.scope.is_whole  # the caller did not say which worker wrote it
    assert set(DIAGNOSIS_FACTS) <= set(top.evidence)
    assert top.evidence["location"] == "train.log:6" and top.evidence["layer"] == "runtime"
    assert top.evidence["sources"] == ["train.log"] and top.evidence["last_line_no"] == 6
    assert any("Ran out of memory in memory space hbm" in line for line in top.evidence["log_excerpt"])
    assert top.evidence["first_timestamp"] is None  # a traceback line carries no time
    assert warn.evidence["first_timestamp"] == "0501 10:00:01.000000" and warn.evidence["first_line_no"] == 2
    assert top.message == f"train.log:6: {cause_of(top)}" and cause_of(top) == load_catalog().get("hbm-oom-compile").cause
    assert set(pulled_evidence(top)) == set(top.evidence) - set(DIAGNOSIS_FACTS)
    assert "hbm_used_bytes" in pulled_evidence(top)


def test_a_log_finding_survives_the_trip_between_provider_and_check():
    for finding in diagnose_text(OOM_THEN_WARN * 2, "train.log"):
        again = Finding.from_dict(finding.to_dict())
        assert again == finding
        assert again.to_dict() == finding.to_dict()
    top = diagnose_text(OOM_THEN_WARN * 2, "train.log")[0]
    assert top.evidence["count"] == 2 and top.message.startswith("train.log:6, 2 times: ")
    assert top.evidence["last_line_no"] == 6 + OOM_THEN_WARN.count("\n")


def test_a_source_fed_with_its_worker_scopes_the_findings_seen_there():
    from tpudoctor.logdiag import Diagnoser

    diagnoser = Diagnoser()
    diagnoser.feed_lines(OOM_THEN_WARN.splitlines(), "worker-1.log", scope=Scope.of(workers=[1]))
    diagnoser.feed_lines(OOM_THEN_WARN.splitlines()[:2], "worker-0.log", scope=Scope.of(workers=[0]))
    diagnoser.feed_lines(OOM_THEN_WARN.splitlines()[:2], "unknown.log")  # no scope given: adds none
    oom, hugepages = diagnoser.diagnoses()
    assert oom.scope == Scope(workers=("1",)) and hugepages.scope == Scope(workers=("0", "1"))
    assert hugepages.evidence["sources"] == ["worker-1.log", "worker-0.log", "unknown.log"]
    assert diagnose_text(OOM_THEN_WARN, scope=Scope.of(hosts=["t1v-n-0"]))[0].scope.hosts == ("t1v-n-0",)
