"""``tpudoctor memory`` end to end: every real capture in ../shared/data, a JAX CPU capture made here, the OOM logs
of tests/data/memory, every format, bad inputs, and ``tpudoctor check --step 4``'s pointer to the command."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from paths import TESTS
from shared_data import SHARED_DATA as SHARED

from tpudoctor import cli
from tpudoctor.captures.memory_events import read_memory_events
from tpudoctor.memory.timeline import allocator_timelines
from tpudoctor.schema import validate

if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
TPU = SHARED / "xprof_tpu_inference_2.xplane.pb"
CAPTURES = [TPU, *sorted(SHARED.glob("xprof_gpu_multi_worker_*.xplane.pb")),
            *sorted((SHARED / "tracelens_jax_gpu").glob("*.xplane.pb"))]
OOM_LOG = TESTS / "data" / "memory" / "easydel_166_compile_hbm_report.log"
RUNTIME_LOG = TESTS / "data" / "memory" / "trax_431_runtime_allocate_fragmentation.log"


def _memory(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _doc(capsys, *args: str) -> dict:
    code, out, err = _memory(capsys, *args, "--format", "json")
    assert code in (0, 1), err
    doc = json.loads(out)
    validate(doc, "memory_report")
    return doc


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name[:40])
def test_every_capture_validates_and_its_peaks_are_the_readers(capsys, capture):
    if not capture.exists():
        pytest.skip(f"{capture} is not here (../shared/data holds the real captures)")
    doc = _doc(capsys, str(capture))
    (host,) = doc["hosts"]
    timelines = allocator_timelines(read_memory_events(capture))
    assert [a["allocator"] for a in host["allocators"]] == list(timelines)
    for row in host["allocators"]:
        peak = timelines[row["allocator"]].peak
        assert (row["peak_bytes"], row["capacity_bytes"], row["step"]) == (peak.bytes_in_use, peak.capacity_bytes,
                                                                         peak.step)
        assert row["heap_bytes"] == peak.heap_bytes and row["stack_bytes"] == peak.stack_bytes
        assert max(row["timeline"]["bytes_in_use"]) == peak.bytes_in_use  # the sampled line keeps the peak
        assert len(row["timeline"]["time_ms"]) <= 1000


def test_the_v6e_capture_per_chip_table_and_outlier_verdict(capsys):
    if not TPU.exists():
        pytest.skip("the v6e capture is not here")
    doc = _doc(capsys, str(TPU))
    pod = doc["pod"]
    assert [c["allocator"] for c in pod["chips"]] == ["0", "1", "2", "3"]
    assert [c["peak_bytes"] for c in pod["chips"]] == [21492569216, 21492671104, 21492671104, 21492569216]
    assert pod["median_bytes"] == 21492620160 and pod["mad_bytes"] == 50944
    # the four chips are within 0.0005 % of each other: the rule names none, and says the spread
    assert pod["outliers"] == [] and pod["verdict"].startswith("no chip stands out")
    (outlier,) = [f for f in doc["findings"] if f["id"] == "memory-chip-outlier"]
    assert outlier["status"] == "PASS" and "99.50 KiB" in outlier["message"]
    (program,) = doc["hosts"][0]["programs"]
    assert program["program"].startswith("jit_f(") and "running at the peak of allocator(s) 0, 3" in program["why"]
    assert program["fixes"] and program["fixes"][0]["saving_bytes"] > 0


def test_the_outlier_rule_names_a_chip_well_above_its_peers():
    from tpudoctor.memory.pod_table import chip_outliers

    assert chip_outliers([100, 101, 99, 100, 130])["outliers"] == [4]
    assert chip_outliers([100, 101, 99, 100, 104])["outliers"] == []  # under 5 % of the median
    assert chip_outliers([100, 140, 60, 100, 150])["outliers"] == []  # within 4 MADs


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory):
    """A JAX CPU capture of a train step that is too big: the parameters are not donated, so the update holds
    old and new weights at once."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def loss(params, x):
        for w in params.values():
            x = jnp.tanh(x @ w)
        return jnp.sum(x * x)

    @jax.jit
    def train_step(params, x):
        grads = jax.grad(loss)(params, x)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    params = {f"w{i}": jnp.ones((1024, 1024)) * 0.01 for i in range(4)}
    x = jnp.ones((256, 1024))
    jax.block_until_ready(train_step(params, x))
    out = tmp_path_factory.mktemp("memory_cmd_trace")
    jax.profiler.start_trace(str(out))
    for _ in range(2):
        params = jax.block_until_ready(train_step(params, x))
    jax.profiler.stop_trace()
    return out


def test_a_cpu_train_step_gets_a_top_ranked_fix_with_its_saving(capsys, cpu_capture):
    doc = _doc(capsys, str(cpu_capture))  # the logdir: its newest run's host file
    (host,) = doc["hosts"]
    assert host["allocators"] == [] and any("no allocator memory events" in n for n in host["notes"])
    (program,) = host["programs"]
    assert program["program"].startswith("jit_train_step") and "largest program" in program["why"]
    top = program["fixes"][0]
    assert top["id"] == "donate-buffers" and top["saving_bytes"] == 4 * 1024 * 1024 * 4  # the four f32 weights
    fired = [f for f in doc["findings"] if f["id"] == "donate-buffers"]
    assert fired and fired[0]["status"] == "WARN" and fired[0]["evidence"]["saving_bytes"] == top["saving_bytes"]


def test_an_oom_log_is_a_fail_quoting_its_totals_and_fixes_unknown(capsys):
    code, out, _ = _memory(capsys, str(OOM_LOG), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    validate(doc, "memory_report")
    (oom,) = [f for f in doc["findings"] if f["id"] == "memory-oom"]
    assert oom["status"] == "FAIL" and oom["kind"] == "memory"
    assert "63.80 GiB used of 30.75 GiB" in oom["message"] and "largest allocations: 2.00 GiB f32[32,4096,4096]" \
        in oom["message"]
    assert oom["evidence"]["fixes"] == "unknown" and oom["confidence"]["level"] == "unknown"
    assert any("jax.profiler" in c for c in oom["remediation"]["commands"])
    (listing,) = doc["texts"][0]["listings"]
    assert listing["header"]["capacity_bytes"] == int(30.75 * (1 << 30)) and listing["fixes"] == "unknown"
    assert _memory(capsys, str(OOM_LOG), "--exit-zero")[0] == 0


def test_a_runtime_allocation_failure_and_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(RUNTIME_LOG.read_text()))
    doc = _doc(capsys, "-")
    (oom,) = [f for f in doc["findings"] if f["id"] == "memory-oom"]
    assert oom["status"] == "FAIL" and "allocating" in oom["message"] and doc["texts"][0]["source"] == "<stdin>"


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit"])
def test_every_format_renders(capsys, fmt, tmp_path):
    inputs = [str(p) for p in (TPU, OOM_LOG) if p.exists()]
    out = tmp_path / f"report.{fmt}"
    code, _, err = _memory(capsys, *inputs, "--format", fmt, "-o", str(out))
    assert code == 1, err
    text = out.read_text()
    if fmt == "json":
        validate(json.loads(text), "memory_report")
    elif fmt == "junit":
        suite = ET.fromstring(text).find("testsuite")
        assert int(suite.get("failures")) >= 1 and len(suite.findall("testcase")) == int(suite.get("tests"))
    elif fmt == "html":
        assert text.count("<polyline class=\"line\"") == (4 if TPU.exists() else 0) and 'class="peak"' in text
    assert "ran out of HBM" in text


def test_values_from_the_input_are_escaped(capsys, tmp_path):
    log = tmp_path / "evil.log"
    log.write_text(OOM_LOG.read_text().replace("jit(casual_language_model_train_step)",
                                               "<script>x</script>\x1b]0;pwn\x07"))
    _, out, _ = _memory(capsys, str(log), "--format", "html")
    assert "<script>x" not in out and "&lt;script&gt;" in out
    _, out, _ = _memory(capsys, str(log), "--format", "text")
    assert "\x1b" not in out


@pytest.mark.parametrize("kind", ["missing", "empty", "corrupt", "no-oom", "bad-mesh"])
def test_bad_inputs_exit_2_without_a_traceback(capsys, tmp_path, kind):
    path = tmp_path / "x.xplane.pb"
    args = [str(path)]
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "corrupt":
        path.write_bytes(b"\xef\xbf\xbd" * 1000)
    elif kind == "no-oom":
        path = tmp_path / "train.log"
        path.write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
        args = [str(path)]
    elif kind == "bad-mesh":
        path = OOM_LOG
        args = [str(path), "--mesh", "data"]
    code, _, err = _memory(capsys, *args)
    assert code == 2, err
    assert "Traceback" not in err and err.strip()


def test_check_step_4_points_an_oom_log_to_tpudoctor_memory(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path / "no-tpu-logs"))
    monkeypatch.setenv("TPUDOCTOR_DEFAULT_TPU_LOG_DIR", str(tmp_path / "none"))
    monkeypatch.delenv("TPUDOCTOR_LOGGING_ENDPOINT", raising=False)
    code = cli.main(["check", "--step", "4", "--log-file", str(OOM_LOG), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    (result,) = [r for r in doc["results"] if r["id"] == "LOGS-001"]
    commands = result["remediation"]["commands"]
    assert any(c.startswith(f"tpudoctor memory {OOM_LOG} ") for c in commands), commands  # this log, by its path
    assert any("tpudoctor profile capture" in c and "tpudoctor memory" in c for c in commands)


def test_gs_inputs_through_the_storage_emulator(capsys, gcs_emulator):
    """A capture run prefix and an OOM log in Cloud Storage read like local ones; the report names the URIs, and
    nothing is written to the bucket."""
    if not TPU.exists():
        pytest.skip("the v6e capture is not here")
    bucket = gcs_emulator.create_bucket("jobs")
    run = "exp/plugins/profile/2026_12_01_10_00_00"
    bucket.blob(f"{run}/t1v-n-0.xplane.pb").upload_from_filename(str(TPU))
    bucket.blob("exp/logs/train.log").upload_from_string(OOM_LOG.read_bytes())
    before = sorted(b.name for b in gcs_emulator.list_blobs("jobs"))
    local = _doc(capsys, str(TPU))
    doc = _doc(capsys, "gs://jobs/exp", "gs://jobs/exp/logs/train.log")
    (host,) = doc["hosts"]
    assert host["host"] == "t1v-n-0" and host["run"] == "2026_12_01_10_00_00"
    assert host["source"] == f"gs://jobs/{run}/t1v-n-0.xplane.pb"
    assert [(a["allocator"], a["peak_bytes"]) for a in host["allocators"]] == [
        (a["allocator"], a["peak_bytes"]) for a in local["hosts"][0]["allocators"]]
    assert doc["texts"][0]["source"] == "gs://jobs/exp/logs/train.log" and doc["texts"][0]["listings"]
    assert sorted(b.name for b in gcs_emulator.list_blobs("jobs")) == before
    code, _, err = _memory(capsys, "gs://jobs/none-here")
    assert code == 2 and "Traceback" not in err and "gs://jobs/none-here" in err


# --- small faults the 2026-12-04 probe found (N29) ------------------------------------------------------------------

def test_buffer_tables_print_no_invalid_dtype(capsys):
    if not TPU.exists():
        pytest.skip("the v6e capture is not here")
    code, out, err = _memory(capsys, str(TPU))
    assert code in (0, 1), err
    assert "INVALID" not in out
    doc = _doc(capsys, str(TPU))
    dtypes = {b["dtype"] for a in doc["hosts"][0]["allocators"] for b in a["peak_buffers"]}
    assert "INVALID" not in dtypes and "" in dtypes  # the preallocated and untyped rows carry no dtype


@pytest.mark.parametrize("log", sorted((TESTS / "data" / "memory").glob("*.log")), ids=lambda p: p.stem)
def test_an_oom_headline_says_what_ran_out_once(capsys, log):
    code, out, err = _memory(capsys, str(log))
    assert code == 1, err
    for line in out.splitlines():
        if line.startswith("[✗] "):
            title, _, message = line[4:].partition("): ")
            what = title.rsplit(" (", 1)[0]
            assert not message.startswith(what), line


def test_a_mesh_axis_given_twice_is_refused(capsys):
    code, out, err = _memory(capsys, "--mesh", "data=8,data=4", str(OOM_LOG))
    assert code == 2 and "axis 'data' is given twice" in err


def test_gs_inputs_that_name_nothing_say_what_is_wrong(capsys, gcs_emulator):
    """The 2026-12-04 probe's N24, against the storage emulator: no bucket, a missing object, a truncated capture
    object and a name no bucket can have each get their own reason, naming the URI."""
    if not TPU.exists():
        pytest.skip("the v6e capture is not here")
    bucket = gcs_emulator.create_bucket("jobs")
    bucket.blob("trunc/h.xplane.pb").upload_from_string(TPU.read_bytes()[:5000])
    code, _, err = _memory(capsys, "gs://")
    assert code == 2 and "names no bucket" in err and "it is empty" not in err
    code, _, err = _memory(capsys, "gs://jobs/missing.log")
    assert code == 2 and "gs://jobs/missing.log: no such object" in err and "it is empty" not in err
    code, _, err = _memory(capsys, "gs://jobs/trunc")
    assert code == 2 and "gs://jobs/trunc/h.xplane.pb" in err and "tpudoctor-memory-" not in err, err
    code, _, err = _memory(capsys, "gs://Bad_Bucket!/x.log")
    assert code == 2 and "'Bad_Bucket!' is not a valid bucket name" in err and "credential" not in err.lower(), err
