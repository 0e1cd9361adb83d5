"""goodput on logs no known form reads: the clock and step series inferred from the log itself, and MLPerf's
MLLOG result logs (tests/data/logs/training_heldout_2, frozen and labelled by hand before the reader changed)."""

from __future__ import annotations

import sys

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from paths import TESTS

from tpudoctor.goodput.analyze import analyze_paths

HELD_OUT = TESTS / "data" / "logs" / "training_heldout_2"
LOGS = tomllib.loads((HELD_OUT / "manifest.toml").read_text(encoding="utf-8"))["log"]
MLLOGS = [log for log in LOGS if log.get("mllog")]
RULESET = {"v10": "1.0.0", "v20": "2.0.0", "v31": "3.1.0", "v40": "4.0.0"}


@pytest.mark.parametrize("log", MLLOGS, ids=lambda log: log["file"].removesuffix(".log"))
def test_mllog_init_and_run_equal_mlcommons_own_reading(log):
    """init and run durations to the millisecond: the hand label, and mlcommons' mlperf-logging parser."""
    parser = pytest.importorskip("mlperf_logging.compliance_checker.mlp_parser")
    path = HELD_OUT / log["file"]
    lines, failed = parser.parse_file(str(path), ruleset=RULESET[log["file"].split("_")[1]])
    assert not failed
    at = {}
    for line in lines:
        at.setdefault(line.key, line.timestamp)
    theirs = (round(at["init_stop"] - at["init_start"]), round(at["run_stop"] - at["run_start"]))  # milliseconds
    doc = analyze_paths([str(path)])
    g = doc["goodput"]
    assert (g["mllog"]["init_ms"], g["mllog"]["run_ms"]) == theirs == (log["init_ms"], log["run_ms"])
    assert doc["workers"][0]["step_lines"] == g["mllog"]["blocks"] == log["steps_logged"] and g["failures"] == []


@pytest.mark.parametrize("name", ["mllog_v40_maxtext_v5p3072_gpt3_r2", "mllog_v31_pax_v5e4096_gpt3_r0"])
def test_mlperf_slow_blocks_are_listed_not_charged(name):
    """MLPerf's timed run is training by its rules, and ml-goodput-measurement's goodput discounts only the first
    step's excess (PROGRAM_STARTUP), no anomalous step: the slow blocks are listed as deviation, kept productive
    (they were OTHER: 0.770 and 0.658 against the hand labels 0.7917 and 0.671)."""
    log = next(x for x in LOGS if x["file"] == name + ".log")
    g = analyze_paths([str(HELD_OUT / log["file"])])["goodput"]
    assert g["outlier_count"] >= 1 and g["step_time_deviation"]["anomalous_steps"] >= 1
    assert "step intervals far above the median, nothing in the log says why" not in g["badput"]["OTHER"].get(
        "parts", {})
    assert g["ettr"] == pytest.approx(log["ettr"], abs=log["ettr_tolerance"])


@pytest.mark.parametrize("name", ["mllog_v10_jax_shampoo_v4_256_resnet_r0", "mllog_v20_tf_v4_256_dlrm_r0",
                                  "mllog_v40_maxtext_v5p12288_gpt3_r1"])
def test_mlperf_productive_time_is_the_timed_run(name):
    """MLPerf scores run_start..run_stop: the first block's compilation and the evaluations after the last block
    are inside it. The ETTR is that run over init_start..run_stop, the parts add up to the wall (before: the
    blocks alone, 0.256 against the label's 0.3376 for the shampoo run; the dlrm run's parts overran its wall)."""
    log = next(x for x in LOGS if x["file"] == name + ".log")
    g = analyze_paths([str(HELD_OUT / log["file"])])["goodput"]
    assert g["productive_s"] == pytest.approx(log["run_ms"] / 1000.0, abs=0.002)
    assert g["ettr"] == pytest.approx(log["ettr"], abs=0.002)
    assert g["badput"]["PROGRAM_STARTUP"]["seconds"] == 0.0
    assert sum(b["seconds"] for b in g["badput"].values()) + g["productive_s"] == pytest.approx(g["wall_s"], abs=0.01)
    assert any("MLPerf's timed run" in n for n in g["notes"])


def test_fairseq_on_tpu_reads_its_steps_clock_and_start():
    """fairseq's train_inner lines (issue 2338) were 'no step line'; now 4 step lines 100..400, its Python-logging
    clock, and its own wall= counter putting the process start 439 s before the first line: ETTR 0.219."""
    g = analyze_paths([str(HELD_OUT / "fairseq_tpu_v3_8_transformer_2338.log")])["goodput"]
    assert (g["first_step"], g["last_step"], g["wall_s"]) == (100, 400, 547.0)
    assert g["ettr"] == pytest.approx(0.219, abs=0.01)
    assert "num_updates=<*>" in g["inferred"]["steps_from"] and "ISO" in g["inferred"]["clock"]
    # the 100 updates to 200 took 48 s against 30 s: the two 'XLA compilation detected' lines inside say why
    assert g["badput"]["PROGRAM_STARTUP"]["seconds"] == pytest.approx(18.0)


def test_a_relative_clock_gives_wall_time_but_no_date():
    doc = analyze_paths([str(HELD_OUT / "jax_gpu_jit_elapsed_minutes.log")])
    assert doc["wall_start"] is None and doc["goodput"]["wall_s"] == pytest.approx(78.6)
    assert doc["goodput"]["ettr"] == pytest.approx(0.71, abs=0.02)


def _run_lines() -> list[tuple[float, str]]:
    """One synthetic run: steps 1-10 two seconds apart, a relaunch after 90 s that resumes at step 6, steps 6-20."""
    out, t = [], 0.0
    for step in range(1, 11):
        t += 2.0
        out.append((t, f"step {step} | loss {3.0 - step / 100:.3f} | 2.00 s/step"))
    t += 90.0
    for step in range(6, 21):
        t += 2.0
        out.append((t, f"step {step} | loss {3.0 - step / 100:.3f} | 2.00 s/step"))
    return out


def _iso(t: float, sep: str = "T", zone: str = "Z") -> str:
    import datetime as dt

    return (dt.datetime(2026, 1, 5, 10, 0, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=t)).strftime(
        f"%Y-%m-%d{sep}%H:%M:%S.%f")[:-3] + zone


def _glog(t: float) -> str:
    import datetime as dt

    return (dt.datetime(2026, 1, 5, 10, 0) + dt.timedelta(seconds=t)).strftime("I%m%d %H:%M:%S.%f")


PREFIXES = {
    "launcher_and_process_clock": lambda t, m: f"{_iso(t + 0.4)} worker-0 {_glog(t)} 1 train.py:88] {m}",
    "collector_clock": lambda t, m: f"{_iso(t)} stdout F {m}",
    "kubectl_prefix": lambda t, m: f"[pod/train-0/main] {_iso(t)} {m}",
    "ray": lambda t, m: f"(RayTrainWorker pid=4120, ip=10.0.0.7) {_iso(t, ' ', '')} INFO {m}",
    "wandb_output_log": lambda t, m: m,
    "no_clock": lambda t, m: f"INFO:train:{m}",
}


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
def test_one_run_under_every_prefix_reads_the_same(prefix, tmp_path):
    """The same run printed by a launcher, a collector, kubectl --prefix, Ray, W&B's output.log or with no clock:
    the same steps and starts everywhere, the same ETTR wherever a clock is present."""
    lines = [PREFIXES[prefix](t, m) for t, m in _run_lines()]
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    g = analyze_paths([str(path)])["goodput"]
    assert (g["first_step"], g["last_step"]) == (1, 20)
    assert g["repeated_steps"] == 5 and g["restarts"] == 1
    if prefix in ("wandb_output_log", "no_clock"):
        assert g["ettr"] is None and g["wall_s"] is None
    else:
        # first to last line: 18 + 92 + 28 = 138 s; step intervals 9 x 2 + 14 x 2 = 46 s, less the 5 intervals of
        # steps 6-10 the relaunch did again (10 s): 36 s productive
        assert g["ettr"] == pytest.approx(36 / 138, abs=0.005), g


def _block_seconds(name: str) -> list[float]:
    """The time of each MLPerf training block (block_start..block_stop) of a held-out MLLOG log."""
    import json

    starts, out = {}, []
    for line in (HELD_OUT / name).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line.split(":::MLLOG ", 1)[1])
        first = (entry.get("metadata") or {}).get("first_epoch_num")
        if entry["key"] == "block_start":
            starts[first] = entry["time_ms"]
        elif entry["key"] == "block_stop" and first in starts:
            out.append((entry["time_ms"] - starts[first]) / 1000)
    return out


@pytest.mark.parametrize("name", ["mllog_v10_jax_v4_128_unet3d_r0.log", "mllog_v20_tf_v4_256_dlrm_r0.log",
                                  "mllog_v31_pax_v5e4096_gpt3_r0.log", "mllog_v40_maxtext_v5p3072_gpt3_r2.log"])
def test_the_deviation_rule_is_ml_goodputs_own(name):
    """On real TPU block times, the ideal step time and the anomalous steps are ml-goodput-measurement's."""
    utils = pytest.importorskip("ml_goodput_measurement.src.goodput_utils")
    from tpudoctor.goodput import deviation

    times = _block_seconds(name)
    assert len(times) >= 8
    theirs = utils.compute_ideal_step_time(times)
    assert deviation.ideal_step_time(times) == pytest.approx(theirs, rel=1e-12)
    anomalous, normal = utils.get_anomalous_and_normal_step_times(times)
    assert deviation.anomalous_and_normal(times) == (list(anomalous), list(normal))


def test_a_step_above_median_plus_3_mad_is_anomalous(tmp_path):
    """MaxText steps of 10.0 s and one of 13.0 s: median 10, MAD 0, so 13 s is anomalous (ml-goodput's rule); the
    account had a floor of 1.5 x the median and let it pass as productive."""
    lines, t = [], 0.0
    for step, dt in enumerate([10.0] * 8 + [13.0] + [10.0] * 3):
        t += dt
        stamp = f"I0813 10:{int(t // 60):02d}:{t % 60:09.6f} 1 metric_logger.py:226]"
        lines.append(f"{stamp} completed step: {step}, seconds: {dt:.3f}, loss: 9.1")
    path = tmp_path / "maxtext.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    g = analyze_paths([str(path)])["goodput"]
    assert g["outlier_count"] == 1 and g["outlier_steps"][0]["step"] == 8
    assert g["outlier_steps"][0]["excess_s"] == pytest.approx(3.0)
    assert g["step_time_deviation"]["ideal_step_s"] == pytest.approx(10.0)
    assert g["step_time_deviation"]["anomalous_steps"] == 1


@pytest.mark.parametrize("name", ["mst_gpu_epoch_logger_timed.log", "fairseq_tpu_v3_8_transformer_2338.log"])
def test_a_long_log_read_by_its_sample_template_reads_the_same(name, monkeypatch):
    """A long log's template is found in its first lines and the rest scanned with one regex: the same reading as
    the whole log's (the sample cut to 6 lines here)."""
    from tpudoctor.goodput import inferred

    whole = analyze_paths([str(HELD_OUT / name)])["goodput"]
    monkeypatch.setattr(inferred, "SAMPLE_LINES", 6)
    monkeypatch.setattr(inferred, "EDGE_LINES", 1)
    sampled = analyze_paths([str(HELD_OUT / name)])["goodput"]
    for key in ("steps", "first_step", "last_step", "restarts", "wall_s", "ettr", "median_step_s"):
        assert sampled[key] == whole[key], key


def test_checkpoint_saves_in_plain_words_are_saves_that_quote_their_line():
    """MST's logger: 'Checkpoint saved to .../model_epoch_251.pth' after each epoch; two saves, for epochs 251 and
    252 (hand label saves = 2), each pointing at its line."""
    g = analyze_paths([str(HELD_OUT / "mst_gpu_epoch_logger_timed.log")])["goodput"]
    assert g["checkpoint_saves"] == 2 and [s["step"] for s in g["saves"]] == [251, 252]
    assert [s["where"].rsplit(":", 1)[1] for s in g["saves"]] == ["1", "4"]
    assert g["ettr"] == pytest.approx(0.999, abs=0.01)


def test_the_ettr_interval_holds_the_hand_reading():
    """A clock in hundredths of a minute (0.6 s): the ETTR is given with the bounds that tick allows, and the hand
    label (0.71) lies inside."""
    g = analyze_paths([str(HELD_OUT / "jax_gpu_jit_elapsed_minutes.log")])["goodput"]
    low, high = g["ettr_interval"]
    assert low < 0.71 < high and high - low < 0.06 and g["inferred"]["clock_resolution_s"] == pytest.approx(0.6)


def test_printed_step_times_are_checked_against_the_clock(tmp_path):
    """MST prints each epoch's own time and it matches the clock's gaps (5 of 5); the same log with one printed
    time changed disagrees, says where, and lowers the confidence."""
    text = (HELD_OUT / "mst_gpu_epoch_logger_timed.log").read_text(encoding="utf-8")
    g = analyze_paths([str(HELD_OUT / "mst_gpu_epoch_logger_timed.log")])["goodput"]
    assert g["inferred"]["durations"] == {"checked": 5, "agree": 5, "worst": None}
    edited = tmp_path / "mst.log"
    edited.write_text(text.replace("time: 657.32", "time: 300.00"), encoding="utf-8")
    g = analyze_paths([str(edited)])["goodput"]
    # the clock's gap before epoch 253 is 10:00:04.390 - 09:49:05.973 = 658.417 s
    assert g["inferred"]["durations"]["worst"] == {"step": 253, "off_s": pytest.approx(658.417 - 300.0, abs=0.001)}
    assert any("disagree with the clock's gaps" in n for n in g["notes"])
    assert g["consistency"]["confidence"]["level"] != "high"


def test_when_every_interval_holds_a_compilation_note_the_step_time_comes_from_them():
    """fairseq on a v3-8 (issue 2332) notes an XLA compilation in each of its two intervals; with no clean interval
    the median was unknown and so was the ETTR. Now the intervals themselves give it (31 s per 100): 0.368."""
    g = analyze_paths([str(HELD_OUT / "fairseq_tpu_v3_8_mbart_2332.log")])["goodput"]
    assert g["median_step_s"] == pytest.approx(0.31) and g["step_time_source"].startswith("timestamps, every")
    assert g["ettr"] == pytest.approx(0.368, abs=0.01)


@pytest.mark.parametrize("name", ["fairseq_tpu_v3_8_transformer_2338", "mllog_v31_pax_v5e4096_gpt3_r0"])
def test_standard_input_is_inferred_as_the_file_is(name, monkeypatch):
    """A log no known form reads, piped on standard input, gives what the file gives (it gave 'no step line':
    the inference pass re-read the file and standard input cannot be read twice)."""
    import io

    path = HELD_OUT / f"{name}.log"
    from_file = analyze_paths([str(path)])["goodput"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    from_stdin = analyze_paths(["-"])["goodput"]
    assert from_stdin["ettr"] is not None and from_stdin["ettr"] == from_file["ettr"]
    assert (from_stdin["first_step"], from_stdin["last_step"]) == (from_file["first_step"], from_file["last_step"])
    assert from_stdin["inferred"] == from_file["inferred"]


@pytest.mark.parametrize("name", ["mst_gpu_epoch_logger_timed.log", "fairseq_tpu_v3_8_transformer_2338.log",
                                  "jax_gpu_jit_elapsed_minutes.log"])
def test_the_columnar_second_pass_reads_as_the_line_by_line_one(name, monkeypatch):
    """The inference's second pass holds the log as bytes and line offsets (a regex over the buffer, numpy for
    the line numbers); the same log split line by line (what a carriage return still needs) reads the same."""
    from tpudoctor.goodput import inferred
    from tpudoctor.logs import buffer

    monkeypatch.setattr(inferred, "SAMPLE_LINES", 6)
    monkeypatch.setattr(inferred, "EDGE_LINES", 1)
    columnar = analyze_paths([str(HELD_OUT / name)])["goodput"]
    assert columnar["steps"] and columnar["inferred"] is not None
    monkeypatch.setattr(buffer.LineBuffer, "of", classmethod(lambda cls, data: None))
    by_line = analyze_paths([str(HELD_OUT / name)])["goodput"]
    for key in ("steps", "first_step", "last_step", "restarts", "wall_s", "ettr", "median_step_s",
                "checkpoint_saves", "inferred", "saves"):
        assert columnar.get(key) == by_line.get(key), key


def test_step_clocks_read_a_column_at_a_time_equal_the_line_at_a_time_reading():
    """Every clock of the held-out logs' lines, read by one regex over all rows with numpy dates, equals the
    line-at-a-time reading (innermost_of_kind), clock and resolution; rows with two clocks take the last."""
    from tpudoctor.logs import clocks

    lines = [line for log in HELD_OUT.glob("*.log") for line in log.read_text(encoding="utf-8").splitlines()]
    lines += ["2024-06-01T10:00:01.5Z stdout F I0601 10:00:00.900000 1 train.py:9] step 3", "no clock at all"]
    rows = "\n".join(lines).encode()
    for kind in ("iso", "glog"):
        columnar = clocks.innermost_times(rows, len(lines), kind, year=2024)
        one_by_one = [clocks.innermost_of_kind(line, kind, year=2024) for line in lines]
        assert columnar is not None and sum(c is not None for c in one_by_one) > 20
        assert [(c.t, c.resolution_s) if c else None for c in columnar] == \
            [(c.t, c.resolution_s) if c else None for c in one_by_one]


def test_iso_clocks_found_where_numpy_sees_a_date_are_the_regexs_own_matches():
    """The ISO clocks of a long log's rows are tried only where numpy finds ``dddd-dd-dd``: the same matches, in
    the same places, as the regex tried at every byte (a year glued to digits, a date with no time, two clocks)."""
    from tpudoctor.logs import clocks

    rows = b"\n".join(log.read_bytes() for log in HELD_OUT.glob("*.log")) + (
        b"\n12024-01-02 03:04:05 2024-01-02-03 -2024-01-02 03:04:05+01:00 1999-12-31T23:59:59.1234567891Z"
        b"\n2024-01-02 03:04:0\n2024-01-02 03:04:05")
    ours = clocks._iso_matches(rows)
    assert len(ours) > 20
    assert [(m.span(), m.groups()) for m in ours] == [(m.span(), m.groups()) for m in clocks._ONE["iso"].finditer(rows)]


def test_lines_decoded_at_once_equal_each_line_decoded():
    """A buffer's lines decoded in one go (split at newlines) read as each decoded alone, broken UTF-8 too."""
    import numpy as np

    from tpudoctor.logs.buffer import LineBuffer

    buf = LineBuffer.of(b"ab\xe2\x82\nc\xffd\n\xe2\x82\xacx\n\x80\n\nz\xf0")
    assert buf.texts(np.arange(len(buf))) == [buf[i] for i in range(len(buf))] == ["ab\ufffd", "c\ufffdd", "\u20acx",
                                                                                   "\ufffd", "", "z\ufffd"]
    assert buf.texts(np.array([3, 0])) == [buf[3], buf[0]] and buf.texts(np.zeros(0, dtype=np.int64)) == []


HELD_OUT_3 = TESTS / "data" / "logs" / "training_heldout_3"


def test_set_3_is_frozen_and_was_scored_before_the_reader_changed():
    import hashlib

    frozen = (HELD_OUT_3 / "FROZEN.sha256").read_text(encoding="utf-8").split("\n")
    for line in filter(None, frozen):
        digest, name = line.split()
        assert hashlib.sha256((HELD_OUT_3 / name).read_bytes()).hexdigest() == digest, name
    logs = tomllib.loads((HELD_OUT_3 / "manifest.toml").read_text(encoding="utf-8"))["log"]
    first = tomllib.loads((HELD_OUT_3 / "FIRST_SCORE.toml").read_text(encoding="utf-8"))
    assert len(logs) == first["logs"] >= 20 and first["right"] == 15 and len(first["wrong"]) == 5


def test_a_line_that_reports_steps_per_second_is_a_step_summary():
    """Flax's ImageNet example through clu's metric writer, on four processes (google/flax#3364): '[400]
    steps_per_second=1.58, ... train_loss=...' under absl. No step word stands before the [400]; the rate in steps
    says the line is a step summary. Read as no step at all before; now steps 400..500, each printed by several
    processes once, over the absl clock's 56.147 s (hand label: ETTR 1.00, the window all training)."""
    doc = analyze_paths([str(HELD_OUT_3 / "flax_clu_imagenet_4proc_3364.log")])
    g = doc["goodput"]
    assert doc["workers"][0]["step_lines"] == 2 and (g["first_step"], g["last_step"]) == (400, 500)
    assert g["wall_s"] == pytest.approx(56.147, abs=0.001)
    assert g["ettr"] == pytest.approx(1.0, abs=0.02)


def test_inference_reads_glog_dates_in_the_year_the_known_forms_chose():
    """The same absl log: the known forms read its glog dates (no year) in the year nearest now, the inference in
    1970, and the wall time spanned the two (1767225656 s, ETTR 0.000). One year for both readings."""
    g = analyze_paths([str(HELD_OUT_3 / "flax_clu_imagenet_4proc_3364.log")])["goodput"]
    assert g["wall_s"] < 60 and g["ettr"] > 0.9


HELD_OUT_4 = TESTS / "data" / "logs" / "training_heldout_4"


def test_set_4_is_frozen_and_every_log_is_labelled():
    """Set 4: the hashes hold, FROZEN lists exactly the labelled logs, and every label carries the fields the score
    reads (an ETTR with its tolerance and arithmetic, a step range with steps). It asks nothing of the reader."""
    import hashlib

    frozen = dict(reversed(line.split()) for line in
                  filter(None, (HELD_OUT_4 / "FROZEN.sha256").read_text(encoding="utf-8").split("\n")))
    for name, digest in frozen.items():
        assert hashlib.sha256((HELD_OUT_4 / name).read_bytes()).hexdigest() == digest, name
    logs = tomllib.loads((HELD_OUT_4 / "manifest.toml").read_text(encoding="utf-8"))["log"]
    assert len(logs) >= 20 and sorted(log["file"] for log in logs) == sorted(frozen)
    assert sorted(p.name for p in HELD_OUT_4.glob("*.log")) == sorted(frozen)
    for log in logs:
        assert log["url"].startswith("https://") and log["clock"] in ("full", "time of day", "relative", "none")
        assert {"steps_logged", "sessions", "crashed", "saves", "notes"} <= log.keys(), log["file"]
        assert ("first_step" in log) == ("last_step" in log), log["file"]
        if "ettr" in log:
            assert {"ettr_tolerance", "ettr_arithmetic", "wall_s"} <= log.keys() and 0 < log["ettr"] <= 1, log["file"]
        if log.get("mllog"):
            assert log["init_ms"] > 0 and log["run_ms"] > 0, log["file"]


def test_set_4_was_scored_once_and_the_score_names_only_labelled_logs():
    logs = {log["file"] for log in tomllib.loads((HELD_OUT_4 / "manifest.toml").read_text(encoding="utf-8"))["log"]}
    first = tomllib.loads((HELD_OUT_4 / "FIRST_SCORE.toml").read_text(encoding="utf-8"))
    assert first["logs"] == len(logs) == 22 and first["right"] + len(first["wrong"]) == first["logs"]
    assert set(first["wrong"]) <= logs and len(set(first["wrong"])) == len(first["wrong"]) == 9


def test_minigo_mllog_without_blocks_steps_by_its_epochs():
    """MLPerf v0.7 MiniGo on TPU v4-128 (set 4): no block_start/block_stop, 53 epoch_stop lines. Read before as no
    step and a confident ETTR 0.000 for a run that trained its whole timed run; now 53 steps (epochs) and the
    timed run's 10135.420 s of a 10136.245 s wall."""
    g = analyze_paths([str(HELD_OUT_4 / "mllog_v07_tf_v4_128_minigo_r0.log")])
    assert g["workers"][0]["step_lines"] == 53 and g["goodput"]["mllog"]["blocks"] == 0
    assert g["goodput"]["ettr"] == pytest.approx(10135.420 / 10136.245, abs=1e-4)
    assert "53 epoch_stop lines" in g["goodput"]["inferred"]["steps_from"]


def test_a_log_that_ends_in_start_up_with_no_error_has_no_ettr():
    """MaxText on v6e (set 4): 46 s of start-up lines up to the checkpoint manager, then the excerpt ends; no error,
    no exit. Read before as 'no training step ran: the job started and stopped' with ETTR 0.0; nothing says it
    stopped, so the ETTR is unknown and says what would tell."""
    g = analyze_paths([str(HELD_OUT_4 / "maxtext_xpk_v6e_startup_checkpoint_maxview.log")])["goodput"]
    assert g["steps"] == 0 and g["ettr"] is None and "its exit" in g["nulls"]["ettr"]
    assert not any("started and stopped" in n for n in g["notes"])


def test_whole_second_iso_clocks_read_by_numpy_equal_the_regexs_reading():
    """Rows that each hold one ISO clock with no fraction and no zone are read by numpy alone; they read as the
    regex reads them, and rows it cannot read so (a fraction, a zone, a clock glued to digits, two clocks on a
    row, a row with none) are left to the regex."""
    from tpudoctor.logs import clocks

    lines = [line for log in sorted(HELD_OUT.parent.glob("training_heldout_*/*.log"))
             for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
             if len(clocks.ISO.findall(line)) == 1]
    whole = [line for line in lines if (m := clocks.ISO.search(line)) and not m[7] and not m[8]]
    assert len(whole) > 10
    whole += ["2024-02-29 23:59:59 | step 1", "1999-12-31T23:59:59 step 2", "2100-03-01 00:00:00 step=3",
              "[2023-12-31 23:59:60] leap second"]
    rows = "\n".join(whole).encode()
    fast = clocks._whole_second_iso(rows, len(whole))
    assert fast is not None
    assert fast.tolist() == [clocks.innermost_of_kind(line, "iso").t for line in whole]
    for odd in ("2024-01-02 03:04:05.5 step 1", "2024-01-02T03:04:05Z step 1", "12024-01-02 03:04:05 step 1",
                "2024-01-02 03:04:051 step 1", "2024-01-02 03:04:05 then 2024-01-02 03:04:06", "no clock here",
                "2024-13-02 03:04:05 step 1"):
        odd_rows = rows + b"\n" + odd.encode()
        assert clocks._whole_second_iso(odd_rows, len(whole) + 1) is None, odd
        assert clocks.innermost_times(odd_rows, len(whole) + 1, "iso") in (
            None, [clocks.innermost_of_kind(line, "iso") for line in [*whole, odd]])


def test_step_rows_matched_once_per_shape_equal_the_regex_on_every_row():
    """The step template's regex, run once per row shape (rows alike but for their digits), finds the same rows
    and the same fields as the regex run over every row; a row with the keyword that the template does not
    match, and a row with two matches, read the same too."""
    import re

    import numpy as np

    from tpudoctor.goodput import inferred
    from tpudoctor.logs.buffer import first_match_per_row
    from tpudoctor.logs.templates import matcher, step_series

    checked = 0
    for log in sorted(HELD_OUT.glob("*.log")):
        lines = log.read_text(encoding="utf-8").splitlines()
        read = inferred._Lines(lines, 2024)
        series = step_series([read.message(i) for i in range(len(lines))])
        if series is None or any(ch.isdigit() for ch in re.sub(r"<\*>|<T>", "", series.template)):
            continue
        pattern = re.compile(matcher(series, within_rows=True).pattern.encode())
        groups = (series.field + 1,) + ((series.duration_field + 1,) if series.duration_field is not None else ())
        rows = "\n".join([*lines, lines[series.points[0].index] * 2, "x" + lines[series.points[-1].index][:-2]])
        by_shape = first_match_per_row(pattern, rows.encode(), *groups, digits_alike=True)
        by_row = first_match_per_row(pattern, rows.encode(), *groups)
        assert len(by_row[0]) >= len(series.points)
        assert np.array_equal(by_shape[0], by_row[0]) and by_shape[1] == by_row[1], log.name
        checked += 1
    assert checked >= 5


def test_rare_and_frequent_literals_find_the_same_lines():
    """A buffer finds the lines holding a literal by RE2 (a rare one) or by bytes.find (one on most lines): the
    same lines, each once, as a test of every line."""
    import numpy as np

    from tpudoctor.logs.buffer import LineBuffer

    data = b"\n".join(log.read_bytes() for log in sorted(HELD_OUT.glob("*.log")))
    buf = LineBuffer.of(data)
    assert buf is not None
    for literal in (b"heckpoint", b"loss", b"| INFO |", b"ompil", b"no such text"):
        each = [i for i in range(len(buf)) if literal.decode() in buf[i]]
        assert np.array_equal(buf.lines_with(literal), each)
        assert np.array_equal(buf.lines_with(literal, frequent=True), each)
        assert buf.lines_with(literal, from_line=100).tolist() == [i for i in each if i >= 100]
    both = buf.lines_with(b"heckpoint", b"ompil").tolist()
    assert both == sorted({*buf.lines_with(b"heckpoint").tolist(), *buf.lines_with(b"ompil").tolist()})


def test_a_log_past_the_line_by_line_limit_is_still_inferred_from_its_bytes(monkeypatch, tmp_path):
    """The inference holds a long log as its bytes and line offsets (up to ``MAX_BYTES``, 2 GiB); only a log split
    line by line (a carriage return in it) keeps the lower limit of Python strings a line."""
    from tpudoctor.goodput import inferred

    log = HELD_OUT / "fairseq_tpu_v3_8_transformer_2338.log"
    monkeypatch.setattr(inferred, "LIST_MAX_BYTES", 1000)
    assert analyze_paths([str(log)])["goodput"]["inferred"] is not None
    with_cr = tmp_path / "with_cr.log"
    with_cr.write_bytes(log.read_bytes() + b"progress 1/2\rprogress 2/2\n")
    assert analyze_paths([str(with_cr)])["goodput"].get("inferred") is None
    monkeypatch.setattr(inferred, "LIST_MAX_BYTES", 1 << 30)
    assert analyze_paths([str(with_cr)])["goodput"]["inferred"] is not None
