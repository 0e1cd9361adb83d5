"""The pipeline what-if (issue 43) against its oracle: ByteDance's published results for the three traces of
arXiv 2505.05713 (../shared/data/bytedance_straggler: the slowdown S, the largest dp-rank, stage and op-type
shares, M_W and M_S), and the op-trace reader's errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tpudoctor.errors import InputError

pytest.importorskip("pyarrow")

from shared_data import SHARED_DATA

from tpudoctor.profile.analysis.pipeline_whatif import pipeline_whatif  # noqa: E402
from tpudoctor.profile.op_trace import read_op_trace  # noqa: E402

DATA = SHARED_DATA / "bytedance_straggler"
if not DATA.is_dir():
    DATA = Path("/work/shared/data/bytedance_straggler")
TRACES = ("AR", "SE", "ST")
needs_data = pytest.mark.skipif(not (DATA / "trace-ST.parquet").is_file(),
                                reason="ByteDance's straggler traces (../shared/data/bytedance_straggler) are absent")


@pytest.fixture(scope="module")
def results():
    out = {}
    for t in TRACES:
        trace = read_op_trace(DATA / f"trace-{t}.parquet")
        out[t] = (pipeline_whatif(trace.ops, trace.meta), json.loads((DATA / f"result-{t}.json").read_text()),
                  json.loads((DATA / f"mw-{t}.json").read_text()), json.loads((DATA / f"ms-{t}.json").read_text()))
    return out


@needs_data
@pytest.mark.parametrize("trace", TRACES)
def test_slowdown_matches_the_published_one(results, trace):
    w, published, _, _ = results[trace]
    assert w.known and w.workers == published["job_meta"]["world_size"] // published["job_meta"]["tp_size"] // \
        published["job_meta"]["dsp_size"]
    assert w.slowdown == pytest.approx(published["blocking_slowdown"], abs=0.05)
    # the published S of the issue: AR 1.973, SE 1.537, ST 1.179
    assert published["blocking_slowdown"] == pytest.approx({"AR": 1.973, "SE": 1.537, "ST": 1.179}[trace], abs=1e-3)


@needs_data
@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("group", ["dp_rank", "stage", "optype"])
def test_largest_group_share_matches(results, trace, group):
    w, published, _, _ = results[trace]
    theirs = published[f"blocking_decompose_by_{group}"]
    top_name, top_value = max(theirs.items(), key=lambda kv: kv[1])
    ours = getattr(w, f"by_{group}")
    assert ours.iloc[0]["group"] == top_name
    assert ours.iloc[0]["slowdown"] == pytest.approx(top_value, abs=0.05)


@needs_data
@pytest.mark.parametrize("trace", TRACES)
def test_m_w_and_m_s_match(results, trace):
    w, _, mw, ms = results[trace]
    assert w.m_w == pytest.approx(mw["Mw"], abs=0.05)
    assert w.m_s == pytest.approx(ms["Ms"], abs=0.05)


@needs_data
def test_only_the_slowed_worker_is_priced(results):
    ar, se, st = (results[t][0] for t in TRACES)
    priced = ar.priced_workers
    assert ar.cause == "persistent worker" and priced["rank"].tolist() == [0]
    row = priced.iloc[0]
    assert row["dp_rank"] == 0 and row["stage"] == 0 and row["time_class"] == "compute"
    # removing its persistent excess recovers about what the all-median ideal does: half the step
    assert row["persistent_saved_percent"] == pytest.approx(row["saved_percent"], abs=3.0)
    assert 45 < row["persistent_saved_percent"] < 55
    # the long last stage and the sequence-length imbalance: no single worker to name
    for w in (se, st):
        assert w.priced_workers.empty and w.cause == "stage imbalance"
    assert st.m_s_stage == 3


@needs_data
def test_critical_path_is_a_chain_through_the_slowest_step(results):
    w = results["AR"][0]
    path = w.critical_path
    assert len(path) > 10 and (path["end_ms"] >= path["start_ms"]).all()
    assert (path["start_ms"].iloc[1:].to_numpy() >= path["end_ms"].iloc[:-1].to_numpy() - 1e-6).all()
    assert path["end_ms"].iloc[-1] == pytest.approx(w.per_step["simulated_ms"].max(), rel=1e-6)
    assert 0 in set(path["rank"])  # the slowed worker is on it


def test_reader_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_op_trace(tmp_path / "trace-X.parquet")
    bad = tmp_path / "trace-X.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="not a readable parquet"):
        read_op_trace(bad)
    pd.DataFrame({"rank": [0], "step": [1]}).to_parquet(bad)
    with pytest.raises(InputError, match="columns dp_rank, stage, optype"):
        read_op_trace(bad)


def test_meta_beside_the_trace_is_read(tmp_path):
    rows = [{"dp_rank": d, "stage": 0, "rank": d, "step": s, "optype": "forward-compute", "start_ts": 0.0,
             "duration": 0.01, "seq_id": 0} for d in range(2) for s in range(3)]
    pd.DataFrame(rows).to_parquet(tmp_path / "trace-T.parquet")
    (tmp_path / "meta-T.yaml").write_text("trial_name: T\ndp_size: 2\npp_size: 1\n")
    trace = read_op_trace(tmp_path / "trace-T.parquet")
    assert trace.meta == {"trial_name": "T", "dp_size": 2, "pp_size": 1} and trace.workers == 2 and trace.steps == 3
    (tmp_path / "meta-T.yaml").write_text("dp_size 2\n")
    with pytest.raises(InputError, match="not a 'key: value' line"):
        read_op_trace(tmp_path / "trace-T.parquet")


@needs_data
@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_profile_analyze_takes_an_op_trace_in_every_format(tmp_path, fmt):
    from tpudoctor.cli import main

    out = tmp_path / f"report.{fmt}"
    assert main(["profile", "analyze", str(DATA / "trace-ST.parquet"), "--format", fmt, "-o", str(out)]) == 0
    body = out.read_text()
    if fmt == "json":
        doc = json.loads(body)
        assert doc["kind"] == "pipeline_whatif" and doc["whatif"]["cause"] == "stage imbalance"
        assert doc["whatif"]["slowdown"] == pytest.approx(1.179, abs=0.05) and doc["whatif"]["critical_path"]
        return
    import re

    # the stage-imbalance finding says why it names no worker
    assert "pipeline-stage-imbalance" in body and "excess is persistent and large enough to name" in body
    assert float(re.search(r"slowdown S = ([0-9]+\.[0-9]+)", body).group(1)) == pytest.approx(1.179, abs=0.05)
    assert float(re.search(r"M_S = ([0-9]+\.[0-9]+)", body).group(1)) == pytest.approx(1.219, abs=0.05)
    assert "rank 7 (dp rank 1, stage 3) is persistently" not in body
    if fmt == "html":
        assert "<svg" in body and body.count('class="critical"') >= 10


@needs_data
def test_the_slowed_worker_is_named_and_fail_on_gates(tmp_path):
    from tpudoctor.cli import main

    out = tmp_path / "ar.txt"
    assert main(["profile", "analyze", str(DATA / "trace-AR.parquet"), "-o", str(out), "--fail-on", "fail"]) == 1
    text = out.read_text()
    assert "Rank 0 (dp rank 0, stage 0) is persistently slow" in text and "Its compute time exceeds" in text
    assert "all its ops at the typical duration:" in text  # the saving with every op typical, noise included


@needs_data
def test_the_findings_the_exit_status_is_judged_on_are_shown_in_every_format(tmp_path):
    """The AR trace's slowed worker fails the run (exit 1): its finding is a failed JUnit testcase and a finding line
    in text, as in every other kind (the op trace's view once showed no finding: JUnit had no testcase at all)."""
    import xml.etree.ElementTree as ET

    from tpudoctor.cli import main

    trace = str(DATA / "trace-AR.parquet")
    assert main(["profile", "analyze", trace, "--format", "junit", "-o", str(tmp_path / "ar.xml")]) == 1
    suite = ET.parse(tmp_path / "ar.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1", ET.tostring(suite, encoding="unicode")[:2000]
    assert suite.find("testcase").get("name").startswith("pipeline-straggler-cost Rank 0 (dp rank 0, stage 0)")
    assert main(["profile", "analyze", trace, "-o", str(tmp_path / "ar.txt")]) == 1
    assert "[✗] pipeline-straggler-cost Rank 0 (dp rank 0, stage 0) is persistently slow" in (tmp_path / "ar.txt").read_text()


def test_a_bad_op_trace_exits_2(tmp_path, capsys):
    from tpudoctor.cli import main

    bad = tmp_path / "trace-X.parquet"
    bad.write_text("not parquet")
    assert main(["profile", "analyze", str(bad)]) == 2
    assert "not a readable parquet file" in capsys.readouterr().err
