"""`tpudoctor explain ID` and `tpudoctor list-signatures`: the catalog, told to a person."""

from __future__ import annotations

import json

import pytest

from tpudoctor.cli import main
from tpudoctor.logdiag import load_catalog

CATALOG = load_catalog()


def test_explain_tells_meaning_matches_and_fix(capsys):
    assert main(["explain", "socket-closed"]) == 0
    out = capsys.readouterr().out
    sig = CATALOG.get("socket-closed")
    for section in ("What it means", "What it matches", "Fix", "docs: "):
        assert section in out
    assert sig.cause in out and sig.remediation.text in out
    for pattern in sig.any_patterns:
        assert pattern.pattern in out
    assert "$ " + sig.remediation.commands[0] in out
    assert 'reported as "TPU node was preempted"' in out  # the node-state join is part of the story


@pytest.mark.parametrize("signature_id", CATALOG.ids())
def test_explain_json_for_every_signature(signature_id, capsys):
    assert main(["explain", signature_id, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    info = doc["signature"]
    sig = CATALOG.get(signature_id)
    assert doc["schema_version"] == 1 and info["id"] == signature_id
    assert info["result"] == ("FAIL" if sig.fatal else "WARN")
    assert info["matches_any"] == [p.pattern for p in sig.any_patterns]
    assert info["fix"] == sig.remediation.text and info["docs"].startswith("https://")
    assert "{" not in info["meaning"]


def test_explain_of_the_unrecognised_rule_says_it_is_a_fallback(capsys):
    assert main(["explain", "unrecognised-failure"]) == 0
    out = capsys.readouterr().out
    assert "only where no other signature matches" in out and "result WARN" in out


def test_unknown_id_is_a_usage_error_with_a_suggestion(capsys):
    assert main(["explain", "sokcet-closed"]) == 2
    err = capsys.readouterr().err
    assert "no log signature 'sokcet-closed'" in err and "socket-closed" in err
    assert "Traceback" not in err


def test_list_signatures_lists_the_whole_catalog(capsys):
    assert main(["list-signatures", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [row["id"] for row in doc["signatures"]] == CATALOG.ids()
    assert doc["catalog_version"] == CATALOG.version
    assert main(["list-signatures"]) == 0
    out = capsys.readouterr().out
    assert "hbm-oom-compile" in out and f"{len(CATALOG.ids())} signatures" in out


def test_explain_a_check_says_what_it_checks_where_it_runs_and_what_it_reads(capsys):
    assert main(["explain", "POD-004"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("POD-004: Every worker runs the same framework versions")
    assert "runs on a merged view of every worker's report" in out and "Reads: slice.outcomes, slice.target" in out
    assert main(["explain", "NODE-002", "--format", "json"]) == 0
    check = json.loads(capsys.readouterr().out)["check"]
    assert check["runs_on"] == "worker" and check["facts"] == ["tpu.node"] and check["docs"].startswith("https://")
    assert main(["explain", "POD-099"]) == 2
    assert "no check 'POD-099'" in capsys.readouterr().err
