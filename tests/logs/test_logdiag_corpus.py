"""Every catalog signature against realistic logs: the right root cause, numbers and ranking."""

from __future__ import annotations

import sys

import pytest
from paths import TESTS

from tpudoctor.findings import Finding, Status
from tpudoctor.logdiag import (
    CatalogError,
    cause_of,
    diagnose_file,
    diagnose_text,
    explain_with_node,
    group_events,
    load_catalog,
    parse_bytes,
)
from tpudoctor.logdiag.catalog import parse_catalog, required_literal
from tpudoctor.logdiag.events import MAX_HEAD_LINES, MAX_TAIL_LINES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LOGS = TESTS / "data" / "logs"
EXPECTED = tomllib.loads((LOGS / "expected.toml").read_text())
CATALOG = load_catalog()


def test_catalog_is_versioned_and_covers_the_research_catalog():
    assert isinstance(CATALOG.version, int)
    assert len(CATALOG.signatures) >= 40
    for sig in CATALOG.signatures:
        assert sig.remediation.docs_url.startswith("https://"), sig.id
        assert sig.cause and sig.title, sig.id


@pytest.mark.parametrize("signature_id", CATALOG.ids())
def test_every_signature_is_the_top_diagnosis_of_its_corpus_log(signature_id):
    path = LOGS / f"sig_{signature_id}.log"
    assert path.exists(), f"no corpus log for {signature_id}"
    found = diagnose_file(path)
    assert found, f"{path.name}: nothing recognised"
    top = found[0]
    assert top.id == signature_id, [d.id for d in found]
    sig = CATALOG.get(signature_id)
    assert top.status is (Status.FAIL if sig.fatal else Status.WARN)
    assert top.remediation.text == sig.remediation.text
    assert top.remediation.docs_url == sig.remediation.docs_url
    assert len(top.remediation.commands) == len(sig.remediation.commands)
    assert top.evidence["first_line_no"] is not None and top.evidence["first_line_no"] > 6  # after the noise preamble
    assert len(found) == 1, [d.id for d in found]  # the noise around it matches nothing


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if not v.get("healthy")))
def test_multi_error_logs_rank_root_cause_first(name):
    want = EXPECTED[name]
    found = diagnose_file(LOGS / f"{name}.log")
    ids = [d.id for d in found]
    assert ids[0] == want["top"], ids
    for other in want.get("others", []):
        assert other in ids[1:], ids
    for absent in want.get("absent", []):
        assert absent not in ids, ids
    if "count" in want:
        assert found[0].evidence["count"] == want["count"]
    for key, value in want.get("evidence", {}).items():
        assert found[0].evidence[key] == value, key
    # fatal findings first, then warnings, each in order of first appearance
    fatal = [d for d in found if d.status is Status.FAIL]
    assert found[: len(fatal)] == fatal
    assert [d.evidence["first_line_no"] for d in fatal] == sorted(d.evidence["first_line_no"] for d in fatal)


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if v.get("healthy")))
def test_healthy_logs_give_no_fail(name):
    found = diagnose_file(LOGS / f"{name}.log")
    assert not [d for d in found if d.status is Status.FAIL], [d.id for d in found]


def test_a_traceback_is_one_event_and_chained_tracebacks_stay_together():
    text = (LOGS / "multi_warn_then_oom_then_followon.log").read_text()
    events = list(group_events(text.splitlines()))
    tb = [e for e in events if e.lines[0].startswith("Traceback")]
    assert len(tb) == 1
    assert tb[0].first_line_no == 6
    assert any(line.startswith("SystemExit: 1") for line in tb[0].lines)
    assert any("Total hbm usage" in line for line in tb[0].lines)


def test_long_events_keep_head_and_tail_only():
    frames = [f'  File "m{i}.py", line {i}, in f\n    g()' for i in range(5000)]
    text = "Traceback (most recent call last):\n" + "\n".join(frames) + (
        "\nRuntimeError: The TPU is already in use by process with pid 77. Not attempting to load libtpu.so\n")
    (event,) = list(group_events(text.splitlines()))
    assert len(event.lines) == MAX_HEAD_LINES + MAX_TAIL_LINES
    assert event.dropped_lines > 9000
    found = diagnose_text(text)
    assert found[0].id == "tpu-in-use" and found[0].evidence["pid"] == 77
    assert found[0].evidence["first_line_no"] == 10002  # the exception line, counted through the dropped middle


def test_unprefixed_noise_does_not_hide_a_later_error():
    noise = "\n".join(f"tqdm {i}/100" for i in range(200))
    text = f"I0501 10:00:00.000 1 x.cc:1] start\n{noise}\nThere is no more capacity in the zone \"us-east5-a\"\n"
    assert [d.id for d in diagnose_text(text)] == ["zone-stockout"]


def test_equal_pjrt_versions_are_not_a_warning():
    same = "The PJRT plugin has PJRT API version 0.54. The framework PJRT API version is 0.54.\n"
    other = "The PJRT plugin has PJRT API version 0.54. The framework PJRT API version is 0.51.\n"
    # a one-line excerpt cannot tell how the run ended (outcome-unknown); what matters: no version warning
    assert [d.id for d in diagnose_text(same)] == ["outcome-unknown"]
    assert [d.id for d in diagnose_text(other)] == ["pjrt-api-differs"]


def test_node_facts_explain_socket_closed_as_preemption():
    found = diagnose_file(LOGS / "multi_socket_closed_preempted.log")
    explained = explain_with_node(found, {"state": "PREEMPTED", "health": None, "symptoms": []})
    assert explained[0].title == "TPU node was preempted"
    assert "PREEMPTED" in cause_of(explained[0])
    assert explained[0].evidence["node_state"] == "PREEMPTED"
    assert explained[0].evidence["log_signature"] == "socket-closed"
    assert explained[0].remediation.docs_url == "https://cloud.google.com/tpu/docs/preemptible"
    # a READY node explains nothing
    assert explain_with_node(found, {"state": "READY"})[0].title == found[0].title


def test_node_symptom_confirms_hbm_oom():
    found = diagnose_file(LOGS / "sig_hbm-oom-compile.log")
    explained = explain_with_node(found, {"state": "READY", "symptoms": [{"type": "HBM_OUT_OF_MEMORY"}]})
    assert "HBM_OUT_OF_MEMORY" in cause_of(explained[0])


def test_fix_commands_carry_the_values_from_the_log():
    (found,) = diagnose_file(LOGS / "multi_tpu_in_use_repeated.log")
    assert "kill 1999 && sudo rm -f /tmp/libtpu_lockfile" in found.remediation.commands
    top = diagnose_file(LOGS / "multi_gcs_then_notfound.log")[0]
    assert any("gs://my-ckpt --member=serviceAccount:tpu-sa@my-project.iam.gserviceaccount.com" in c
               for c in top.remediation.commands)
    (no_pid,) = diagnose_text("libtpu.so already in use by another process probably owned by another user.\n")
    assert "kill <PID> && sudo rm -f /tmp/libtpu_lockfile" in no_pid.remediation.commands


def test_across_worker_logs_the_earliest_fatal_error_wins():
    from tpudoctor.logdiag import Diagnoser

    worker0 = ["E0501 10:05:00.000000 1 coordination.cc:9] Barrier timed out. Id: PjRT_Client_Connect."]
    worker1 = ["I0501 10:00:00.000000 1 x.cc:1] starting",
               "E0501 10:01:00.000000 1 tpu.cc:9] The TPU is already in use by process with pid 12."]
    diagnoser = Diagnoser()
    diagnoser.feed_lines(worker0, "worker0.log")  # fed first, but its error came four minutes later
    diagnoser.feed_lines(worker1, "worker1.log")
    assert [d.id for d in diagnoser.diagnoses()] == ["tpu-in-use", "barrier-timeout"]


def test_log_findings_round_trip_through_dict():
    found = diagnose_file(LOGS / "multi_gcs_then_notfound.log")
    again = [Finding.from_dict(d.to_dict()) for d in found]
    assert [d.to_dict() for d in again] == [d.to_dict() for d in found]


@pytest.mark.parametrize(("text", "value"), [("15.48G", round(15.48 * 2**30)), ("530.00M", 530 * 2**20),
                                             ("0B", 0), ("2GiB", 2 * 2**30), ("512", 512)])
def test_parse_bytes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize(("pattern", "literal"), [
    (r"Ran out of memory in memory space hbm", "Ran out of memory in memory space hbm"),
    (r"Used ([0-9.]+) of", "Used "),
    (r"a ([0-9]+) b", None),
    (r"[Hh]eartbeat.{0,80}timeout", "eartbeat"),
    (r"timed? ?out of the (a|b) thing", "out of the "),
    (r"a|b", None),
])
def test_required_literal(pattern, literal):
    assert required_literal(pattern) == literal


def test_malformed_catalogs_are_rejected_clearly():
    good = '''version = 1
[[signature]]
id = "x"
title = "X"
layer = "runtime"
any = ["boom"]
cause = "c"
fix = { text = "t" }
docs = "https://example.com"
severity = "high"
fatal = true
'''
    assert parse_catalog(good).ids() == ["x"]
    with pytest.raises(CatalogError, match="bad regex"):
        parse_catalog(good.replace('["boom"]', '["(unclosed"]'))
    with pytest.raises(CatalogError, match="version"):
        parse_catalog(good.replace("version = 1", ""))
    with pytest.raises(CatalogError, match="duplicate"):
        parse_catalog(good + good.split("\n", 1)[1])
    with pytest.raises(CatalogError, match="https"):
        parse_catalog(good.replace("https://example.com", "example.com"))
    with pytest.raises(CatalogError, match="'count' is reserved"):  # it would hide where the finding was seen
        parse_catalog(good + 'extract = [{ name = "count", regex = "([0-9]+) chips", type = "int" }]\n')


def test_a_host_memory_listing_as_the_thread_shows_it_names_its_cause_and_points_to_memory():
    """AI-Hypercomputer/torchprime#28 verbatim (tests/data/memory): no "Ran out of memory" header, only libtpu's
    listing for the host memory space, a glog prefix on every line."""
    log = TESTS / "data" / "memory" / "torchprime_28_host_listing_glog_prefixed.log"
    top = diagnose_file(log)[0]
    assert top.id == "host-memory-program-oom" and top.status is Status.FAIL
    assert abs(top.evidence["host_program_bytes"] - 145.69 * 2**30) < 2**20
    assert top.remediation.commands[0].startswith(f"tpudoctor memory {log}")
