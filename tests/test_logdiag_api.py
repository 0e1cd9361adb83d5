"""The log diagnosis API other steps build on (contracts.md)."""

from tpudoctor.findings import Remediation, Status
from tpudoctor.logdiag import diagnose_text, load_catalog, parse_bytes

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
    assert [d.signature_id for d in found] == ["hbm-oom-compile", "hugepages-disabled"]
    top = found[0]
    assert top.status is Status.FAIL and found[1].status is Status.WARN
    assert top.evidence["hbm_used_bytes"] == parse_bytes("20.54G") == round(20.54 * 2**30)
    assert top.evidence["hbm_capacity_bytes"] == round(15.48 * 2**30)
    assert top.evidence["hbm_excess_bytes"] == round(5.06 * 2**30)
    assert isinstance(top.remediation, Remediation) and top.remediation.docs_url.startswith("https://")
    assert top.first_line_no == 6 and top.source == "train.log" and top.count == 1


def test_catalog_covers_research_entries():
    catalog = load_catalog()
    assert catalog.version >= 1
    assert len(catalog.signatures) >= 40
