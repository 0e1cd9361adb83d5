"""Roofline and MFU in the profile report: computed in the per-host map, combined across hosts,
within 1 % of xprof's roofline_model in the report's JSON, and shown in text, markdown and HTML."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
from paths import TESTS
from test_profile_roofline import GIB, REL, V6E, _rows, _xprof, needs_v6e

import tpudoctor.profile
from tpudoctor.cli import main
from tpudoctor.profile.analysis.roofline import Roofline, analyze_roofline, combine_rooflines
from tpudoctor.schema import load_schema

FIXTURES = TESTS / "fixtures" / "profiles"


def _close(mine, theirs, what):
    assert (mine or 0.0) == pytest.approx(theirs, rel=REL, abs=1e-9), what


@pytest.fixture(scope="module")
def v6e_report(tmp_path_factory):
    if not V6E.exists():
        pytest.skip(f"real TPU capture not found at {V6E} (../shared/data is absent)")
    folder = tmp_path_factory.mktemp("v6e")
    path = folder / "tpu_inference_2.xplane.pb"  # xprof writes a cache beside its input: not beside the original
    shutil.copyfile(V6E, path)
    out = folder / "report.json"
    assert main(["profile", "analyze", str(path), "--format", "json", "-o", str(out)]) == 1  # its FAIL findings, as every report
    return path, json.loads(out.read_text())


@pytest.mark.needs_shared_data
@needs_v6e
def test_report_roofline_agrees_with_xprof_per_op_and_for_the_program(v6e_report):
    path, doc = v6e_report
    table = next(t for t in _xprof(path, "roofline_model") if "peak_flop_rate" in t.get("p", {}))
    theirs = {r["operation"]: r for r in _rows(table) if r["step"] == "Total" and r["include_infeed_outfeed"]}
    r = doc["roofline"]
    program, t = r["program"], theirs["Program"]
    _close(program["time_ps"] / 1e6, t["total_time"], "program time us")
    _close(program["flop_rate_flops_per_s"] / 1e9, t["measured_flop_rate"], "program GFLOP/s")
    _close(program["hbm_bw_bytes_per_s"] / GIB, t["hbm_bw"], "program HBM GiB/s")
    _close(program["roofline_efficiency_percent"] / 100, t["roofline_efficiency"], "program roofline efficiency")
    assert program["bound_by"] == t["bound_by"].lower()
    assert r["ops_total"] == len(r["ops"]) == len(theirs) - 1
    for op in r["ops"]:  # every op by its name
        t = theirs[op["op_name"]]
        _close(op["total_time_ps"] / 1e6, t["total_time"], f"{op['op_name']} time")
        _close(op["flop_rate_flops_per_s"] / 1e9, t["measured_flop_rate"], f"{op['op_name']} GFLOP/s")
        _close(op["hbm_bw_bytes_per_s"] / GIB, t["hbm_bw"], f"{op['op_name']} HBM GiB/s")
        _close(op["operational_intensity_flops_per_byte"], t["operational_intensity"], f"{op['op_name']} OI")
        _close(op["roofline_efficiency_percent"] / 100, t["roofline_efficiency"], f"{op['op_name']} efficiency")
        assert op["bound_by"] == t["bound_by"].lower(), op["op_name"]
    # MFU is a KPI; the MXU stat the runtime left at 0 is unknown, not 0 %; FLOP utilisation is real
    assert doc["kpis"]["mfu_percent"] == pytest.approx(program["mfu_percent"]) and program["mfu_percent"] > 0
    assert doc["device_ops"]["mxu_utilization_percent"] is None
    assert doc["device_ops"]["flops_utilization_percent"] == pytest.approx(program["compute_efficiency_percent"],
                                                                           rel=1e-3)
    schema = load_schema("profile_diagnosis")
    jsonschema.Draft202012Validator(schema["properties"]["roofline"]).validate(r)


@pytest.mark.needs_shared_data
@needs_v6e
def test_two_host_logdir_combines_the_mapped_rooflines(v6e_report, tmp_path):
    """The map returns each host's roofline as plain data; the combine sums them as
    combine_rooflines does over the hosts' loaded events."""
    path, single = v6e_report
    run = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for worker in ("worker-0", "worker-1"):
        shutil.copyfile(path, run / f"{worker}.xplane.pb")
    report = tpudoctor.profile.analyze(tmp_path / "logdir")
    assert set(report.hosts) == {"worker-0", "worker-1"}
    assert all(h.roofline is not None for h in report.hosts.values())
    host = next(iter(tpudoctor.profile.load(str(path)).hosts.values()))
    expected = combine_rooflines([analyze_roofline(host)] * 2).to_dict()
    combined = report.to_dict()["roofline"]
    assert combined["program"]["n_cores"] == 8 and combined["program"]["time_ps"] == 2 * single["roofline"]["program"]["time_ps"]
    for key in ("flop_rate_flops_per_s", "hbm_bw_bytes_per_s", "roofline_efficiency_percent", "mfu_percent"):
        assert combined["program"][key] == pytest.approx(expected["program"][key], rel=1e-9), key
    mine = {op["op_name"]: op for op in combined["ops"]}
    for op in expected["ops"]:
        assert mine[op["op_name"]]["occurrences"] == op["occurrences"]
        assert mine[op["op_name"]]["total_time_ps"] == pytest.approx(op["total_time_ps"], rel=1e-9)


def test_roofline_round_trips_through_plain_data():
    import pandas as pd

    from tpudoctor.profile.analysis.device_peaks import DevicePeaks
    from tpudoctor.profile.analysis.roofline import _op_rates, _program

    peaks = DevicePeaks("TPU v6 Lite", 918e12, 1.64e12)
    ops = pd.DataFrame({"program_id": ["7", "7"], "op_name": ["fusion", "copy"], "category": ["loop fusion", "copy"],
                        "occurrences": [4, 2], **{c: [0.0, 0.0] for c in (
                            "total_time_ps", "self_time_ps", "flops", "model_flops", "bytes_accessed", "hbm_bytes",
                            "cmem_read_bytes", "cmem_write_bytes", "vmem_read_bytes", "vmem_write_bytes")}})
    ops.loc[0, ["total_time_ps", "self_time_ps", "flops", "model_flops", "bytes_accessed", "hbm_bytes"]] = [
        4e9, 4e9, 8e9, 8e9, 1e9, 1e9]
    ops.loc[1, ["total_time_ps", "self_time_ps", "bytes_accessed", "hbm_bytes"]] = [2e9, 2e9, 3e9, 3e9]
    totals = {c: float(ops[c].sum()) for c in ("flops", "model_flops", "bytes_accessed", "hbm_bytes",
                                                "cmem_read_bytes", "cmem_write_bytes", "vmem_read_bytes",
                                                "vmem_write_bytes")}
    roofline = Roofline(peaks, _program(totals, 6_000_000_000, 1, peaks), _op_rates(ops, 6_000_000_000, peaks))
    back = Roofline.from_dict(json.loads(json.dumps(roofline.to_dict())))
    assert back.to_dict() == roofline.to_dict()
    both = combine_rooflines([back, back]).to_dict()
    assert both["program"]["flop_rate_flops_per_s"] == pytest.approx(roofline.program.flop_rate_flops_per_s)
    assert [op["occurrences"] for op in both["ops"]] == [8, 4]


@pytest.mark.needs_shared_data
@needs_v6e
def test_roofline_and_mfu_in_text_and_markdown(v6e_report, tmp_path):
    path, _ = v6e_report
    for fmt in ("text", "markdown"):
        out = tmp_path / f"report.{fmt}"
        assert main(["profile", "analyze", str(path), "--format", fmt, "-o", str(out)]) == 1
        text = out.read_text()
        assert "Roofline and MFU" in text and "MFU 0.000487%" in text
        assert "peaks of TPU v6 Lite (from the capture's device plane): 918 TFLOP/s" in text
        assert "broadcast_add_fusion.1" in text[text.index("Roofline and MFU"):]


@pytest.mark.needs_shared_data
@needs_v6e
def test_html_roofline_chart(v6e_report, tmp_path):
    path, doc = v6e_report
    out = tmp_path / "report.html"
    assert main(["profile", "analyze", str(path), "--format", "html", "-o", str(out)]) == 1
    page = out.read_text()
    chart = page[page.index('aria-label="roofline chart"'):]
    chart = chart[:chart.index("</svg>")]
    plotted = [op for op in doc["roofline"]["ops"] if (op["flop_rate_flops_per_s"] or 0) > 0
               and (op["hbm_operational_intensity_flops_per_byte"] or 0) > 0]
    assert chart.count('class="op"') == len(plotted) == 4  # three fusions and the all-reduce carry FLOPs
    assert 'class="roof-memory"' in chart and 'class="roof-compute"' in chart and 'class="program"' in chart
    assert "13 op(s) without FLOPs" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in chart


def test_no_roofline_section_without_tpu_ops(tmp_path):
    out = tmp_path / "r.json"
    assert main(["profile", "analyze", str(FIXTURES / "jax_compute_bound"), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["roofline"] is None and doc["kpis"]["mfu_percent"] is None
    html_out = tmp_path / "r.html"
    assert main(["profile", "analyze", str(FIXTURES / "jax_compute_bound"), "--format", "html", "-o", str(html_out)]) == 0
    assert "roofline chart" not in html_out.read_text()


def test_kernel_benchmark_is_unknown_through_the_cli(tmp_path):
    out = tmp_path / "k.json"
    assert main(["profile", "analyze", str(FIXTURES / "jax_kernel_benchmark"), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "unknown"
    # 3 kernel calls are no training loop: a micro-benchmark (before, its 3 calls were "3 step(s)")
    assert doc["verdict_reason"].startswith("micro-benchmark: no training loop: PjitFunction(<lambda>) ran 3 time(s)")
    assert "at least 5" in doc["verdict_reason"]
    assert all(f["severity"] not in ("high", "critical") and f["status"] != "FAIL" for f in doc["findings"])
    guard = next(f for f in doc["findings"] if f["id"] == "micro-benchmark")
    assert guard["evidence"]["loop"]["runs"] == 3 and "capture 10 or more steps" in guard["remediation"]["text"]


def test_rates_above_the_roof_are_not_shown_as_measurements():
    from tpudoctor.rendering import render
    from tpudoctor.reports.views.profile import UNMEASURABLE, op_row

    roofline = {
        "peaks": {"device_kind": "TPU v6 Lite", "flops_per_s": 9.18e14, "hbm_bytes_per_s": 1.64e12, "source": "capture"},
        "program": {"flop_rate_flops_per_s": 4.5e9, "compute_efficiency_percent": 0.0005, "mfu_percent": 0.0005,
                    "hbm_bw_bytes_per_s": 7.1e10, "hbm_bw_utilization_percent": 4.35,
                    "hbm_operational_intensity_flops_per_byte": 0.06, "bound_by": "hbm",
                    "roofline_efficiency_percent": 4.35},
        "ops": [
            {"op_name": "fusion", "bound_by": "hbm", "total_time_percent": 80.0, "flop_rate_flops_per_s": 1.6e11,
             "hbm_bw_bytes_per_s": 1.3e12, "hbm_operational_intensity_flops_per_byte": 0.125,
             "roofline_efficiency_percent": 80.4},
            {"op_name": "copy-start.4", "bound_by": "hbm", "total_time_percent": 0.0, "flop_rate_flops_per_s": 0.0,
             "hbm_bw_bytes_per_s": 8.95e17, "hbm_operational_intensity_flops_per_byte": 0.0,
             "roofline_efficiency_percent": 5.46e7},
        ],
        "ops_total": 2,
    }
    fusion, copy_start = map(op_row, roofline["ops"])
    assert fusion[6] == "1.3 TB/s" and fusion[8] == "80.4%"  # HBM bandwidth, roofline efficiency
    assert copy_start[6] == UNMEASURABLE and copy_start[8] == UNMEASURABLE
    assert "* above the roof" in render({"kind": "profile", "verdict": "unknown", "roofline": roofline}, "text")
