"""``tpudoctor diag``'s inputs and words, from the 2026-12-04 hostile probe: how many chips r1 expects (the
accelerator type: devices per chip by generation), ``--expect-chips`` out of range or above the count, a backend
that does not load (its fix follows its error; the chip count is then a SKIP; the headline names what failed),
``--inject`` values that are no number, name a device the run lacks or a test the level does not run, the peer
columns' words and units, and duration errors that name their flag. Judged on pure logic where it can be; the few
runs that need JAX are r1 (about a second each) and marked slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tpudoctor.diag.faults import FaultPlan
from tpudoctor.diag.measure import Inventory
from tpudoctor.diag.pipeline import chip_rows
from tpudoctor.diag.report import DiagReport
from tpudoctor.diag.rule import evaluate_rules, example_devices, example_input, example_timings
from tpudoctor.diag.rules.chips_enumerate import ChipsEnumerate
from tpudoctor.errors import UsageError
from tpudoctor.families import load_rules
from tpudoctor.findings import Status
from tpudoctor.rendering import render

# JAX 0.10.2's own words on this machine: JAX_PLATFORMS=tpu without libtpu, and JAX_PLATFORMS=bogus.
NO_LIBTPU = ("RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot "
             "open shared object file: No such file or directory (set JAX_PLATFORMS='' to automatically choose an "
             "available backend)")
UNKNOWN_BACKEND = ("RuntimeError: Unable to initialize backend 'bogus': Backend 'bogus' is not in the list of known "
                   "backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' to automatically choose an available backend)")
# jax#22070's report: the TPU held by another process.
IN_USE = ("RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid "
          "4242. Not attempting to load libtpu.so in this process.")


def expected_count(expect_chips: int | None, accelerator_type: str | None):
    from tpudoctor.diag.expected import expected_count as count

    return count(expect_chips, accelerator_type)


def cause_of(inventory: Inventory):
    from tpudoctor.diag.rules.backend_loads import cause_of as cause

    return cause(inventory)


def cli(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS", "TPU_ACCELERATOR_TYPE")}
    return subprocess.run([sys.executable, "-m", "tpudoctor", "diag", *args], capture_output=True, text=True,
                          timeout=timeout, env={**base, **(env or {})})


def failed_inventory(error: str, platforms: str | None) -> Inventory:
    return Inventory(backend="none", jax_version="0.10.2", devices=[], process_count=0, error=error,
                     jax_platforms=platforms)


def report_of(subject, level: int = 1) -> dict:
    findings = evaluate_rules(subject, load_rules("diag-rules"))
    report = DiagReport(level=level, host="t1v-n-0", backend=subject.inventory.backend, jax_version="0.10.2",
                        devices=[d.to_dict() for d in subject.inventory.devices], sizes={}, chips=chip_rows(subject),
                        allreduce=None, soak=None, peaks=None, faults_injected=[], findings=findings, duration_s=1.0,
                        tool_version="test")
    return json.loads(json.dumps(report.to_dict()))


# N5: the expected count comes from the accelerator type -------------------------------------------------------
@pytest.mark.parametrize("accelerator_type, chips, devices", [
    ("v2-8", 4, 8),         # 2 TensorCores per chip, each a JAX device
    ("v3-8", 4, 8),
    ("v4-8", 4, 4),         # megacore: 2 TensorCores, one device
    ("v4-16", 4, 4),        # a host of a 2-host slice
    ("v5p-8", 4, 4),
    ("v5litepod-8", 8, 8),  # the suffix counts chips; an 8-chip VM
    ("v5litepod-4", 4, 4),
    ("v5litepod-16", 4, 4),
    ("v6e-8", 8, 8),
    ("v6e-1", 1, 1),
])
def test_an_accelerator_type_gives_the_chips_and_devices_of_one_host(accelerator_type, chips, devices):
    expected = expected_count(None, accelerator_type)
    assert (expected.chips, expected.devices) == (chips, devices)
    assert accelerator_type in expected.source


def test_without_a_known_type_the_count_is_unknown_and_expect_chips_counts_devices_by_the_type():
    assert expected_count(None, None) is None and expected_count(None, "h100-8") is None
    assert expected_count(3, None).devices == 3
    assert (expected_count(3, "v3-8").chips, expected_count(3, "v3-8").devices) == (3, 6)


def _enumerate(count: int, accelerator_type: str | None, *, platform: str = "tpu", kind: str = "TPU v4",
               expect_chips: int | None = None):
    inventory = Inventory(backend=platform, jax_version="0.10.2", devices=example_devices(count, platform, kind),
                          process_count=1)
    return ChipsEnumerate().evaluate(example_input(0, inventory=inventory,
                                                   expected=expected_count(expect_chips, accelerator_type)))


def test_a_v4_8_host_missing_a_chip_fails_r1_and_a_full_one_passes():
    missing = _enumerate(3, "v4-8")
    assert missing.status is Status.FAIL and "3 of 4 chip(s)" in missing.message and "v4-8" in missing.message
    assert "REPLACE-HOST" in missing.remediation.text and missing.evidence["confidence"] == "high"
    assert _enumerate(4, "v4-8").status is Status.PASS
    v3 = _enumerate(8, "v3-8", kind="TPU v3")
    assert v3.status is Status.PASS and "8 of 8 JAX devices (4 v3 chip(s), 2 devices each)" in v3.message
    assert _enumerate(6, "v3-8", kind="TPU v3").status is Status.FAIL


def test_on_the_cpu_stand_in_a_short_count_fails_with_low_confidence_and_no_host_to_replace():
    finding = _enumerate(3, "v4-8", platform="cpu", kind="cpu")
    assert finding.status is Status.FAIL and finding.evidence["confidence"] == "low"
    assert "REPLACE-HOST" not in finding.remediation.text and "3 of 4" in finding.message


@pytest.mark.slow
def test_r1_with_a_v4_8_accelerator_type_and_three_devices_fails_the_count():
    done = cli("-r", "1", "--cpu-devices", "3", "--format", "json",
               env={"JAX_PLATFORMS": "cpu", "TPU_ACCELERATOR_TYPE": "v4-8"})
    found = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
    assert done.returncode == 1 and found["chips-enumerate"]["status"] == "FAIL", done.stdout[-2000:]
    assert found["chips-enumerate"]["evidence"]["expected_from"] == "accelerator type v4-8"


# N6: --expect-chips out of range, or below the count ----------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-1"])
def test_expect_chips_below_one_is_a_usage_error(value):
    done = cli("-r", "1", f"--expect-chips={value}")
    assert done.returncode == 2 and "--expect-chips must be at least 1" in done.stderr, done.stderr


def test_more_chips_than_expected_is_a_warning_about_the_setting_not_a_dead_chip():
    finding = _enumerate(8, None, expect_chips=4)
    assert finding.status is Status.WARN and "REPLACE-HOST" not in finding.remediation.text
    assert "8 device(s), more than the 4 expected from --expect-chips" in finding.message


# N7: a backend that does not load ----------------------------------------------------------------------------
def test_the_backend_fix_follows_the_error():
    libtpu = cause_of(failed_inventory(NO_LIBTPU, "tpu"))
    assert libtpu.what == "libtpu is not installed"
    assert libtpu.remediation.commands == ('pip install "jax[tpu]==0.10.2"', "unset JAX_PLATFORMS")
    bogus = cause_of(failed_inventory(UNKNOWN_BACKEND, "bogus"))
    assert "JAX_PLATFORMS=bogus" in bogus.what and bogus.remediation.commands[0] == "unset JAX_PLATFORMS"
    in_use = cause_of(failed_inventory(IN_USE, None))
    assert any("lsof" in c for c in in_use.remediation.commands) and any("kill 4242" in c
                                                                        for c in in_use.remediation.commands)
    for cause in (libtpu, bogus):
        assert not any("lsof" in c for c in cause.remediation.commands)


def test_without_a_backend_the_count_is_a_skip_the_headline_names_the_runtime_and_junit_counts_the_skip():
    doc = report_of(example_input(0, inventory=failed_inventory(NO_LIBTPU, "tpu"),
                                  expected=expected_count(None, "v4-8")))
    found = {f["id"]: f for f in doc["findings"]}
    assert found["chips-enumerate"]["status"] == "SKIP" and found["chips-enumerate"]["skip_reason"]
    text = render(doc, "text")
    headline = text.splitlines()[0]
    assert "failed: The accelerator runtime loads" in headline and "a chip failed" not in headline
    assert "no backend loaded" in headline and "0 none" not in headline and "1 skipped" in headline
    junit = render(doc, "junit")
    assert 'skipped="1"' in junit and "<skipped" in junit and "chips-enumerate" in junit


def test_a_headline_names_the_chips_that_failed():
    subject = example_input(8, level=2, matmul=example_timings([1.0] * 3 + [1.5] + [1.0] * 4))
    headline = render(report_of(subject, level=2), "text").splitlines()[0]
    assert ": chip cpu:3 failed (" in headline


@pytest.mark.slow
def test_jax_platforms_naming_no_backend_says_to_unset_it_and_skips_the_count():
    done = cli("-r", "1", "--format", "json", env={"JAX_PLATFORMS": "bogus"})
    found = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
    assert done.returncode == 1 and found["backend-loads"]["remediation"]["commands"][0] == "unset JAX_PLATFORMS"
    assert found["chips-enumerate"]["status"] == "SKIP"


# N12, N21: --inject ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["slow:3:1.2.3", "slow:3:.", "slowdown:3:0.5@1..", "slowdown:3:0.5@1.5",
                                  "bitflip:3:0.5", "slow:3:0.5@0.2"])
def test_a_malformed_injection_is_a_usage_error(spec):
    with pytest.raises(UsageError, match="--inject"):
        FaultPlan.parse([spec])


@pytest.mark.parametrize("level, spec, words", [(1, "slow:3:0.5", "r1 runs no timed test"),
                                                (1, "bitflip:3", "r1 runs no GEMM"),
                                                (2, "slowdown:3:0.5@0.5", "r2 runs no soak")])
def test_a_fault_the_level_cannot_show_is_a_usage_error(level, spec, words):
    with pytest.raises(UsageError, match=words):
        FaultPlan.parse([spec]).check_level(level)
    FaultPlan.parse([spec]).check_level(3)


def test_a_fault_on_a_device_beyond_the_run_is_a_usage_error():
    plan = FaultPlan.parse(["bitflip:7", "slow:2:0.3"])
    with pytest.raises(UsageError, match="device 7, but this run has 4 device"):
        plan.check_devices(4)
    plan.check_devices(8)


@pytest.mark.parametrize("args", [["-r", "1", "--inject", "slow:3:1.2.3"], ["-r", "1", "--inject", "slow:3:0.5"],
                                  ["-r", "3", "--soak=-5m"]])
def test_the_probe_s_flags_exit_2_without_a_traceback(args):
    done = cli(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.slow
def test_r2_refuses_a_fault_on_a_device_it_does_not_have_before_measuring():
    done = cli("-r", "2", "--cpu-devices", "4", "--hbm-gib", "0.0625", "--inject", "bitflip:7",
               env={"JAX_PLATFORMS": "cpu"})
    assert done.returncode == 2 and "device 7, but this run has 4 device(s)" in done.stderr, done.stderr


def test_an_injected_run_claims_the_detector_worked_only_for_the_injected_chip():
    from tpudoctor.diag.remedies import chip_fault

    subject = example_input(4, faults=FaultPlan.parse(["slow:2:0.3"]).faults)
    assert "detector works" in chip_fault(subject, ["cpu:2"], "slow", "PERFORMANCE").text
    other = chip_fault(subject, ["cpu:0"], "slow", "PERFORMANCE").text
    assert "detector works" not in other and "cpu:0 had none injected" in other


# N27: the peer columns' words and units ------------------------------------------------------------------------
def test_a_chip_whose_runs_take_longer_is_said_so_and_its_rate_below_is_its_inverse():
    from tpudoctor.diag.judging import longer, rate_below

    assert (longer(1.308), rate_below(1.308)) == ("30.8% longer", "24% below")
    subject = example_input(8, level=2, matmul=example_timings([1.0] * 3 + [1.5] + [1.0] * 4, jitter=0.0))
    finding = {f.id: f for f in evaluate_rules(subject, load_rules("diag-rules"))}["matmul-peers"]
    assert "cpu:3's runs take 50.0% longer than its peers'" in finding.message
    assert "+50.0%" not in finding.message


def test_the_text_table_says_what_its_peer_columns_measure_and_lines_up():
    subject = example_input(8, level=2, matmul=example_timings([1.0] * 3 + [1.5] + [1.0] * 4),
                            hbm=example_timings([0.5] * 8, unit="gbps", work=2**31))
    text = render(report_of(subject, level=2), "text")
    rows = text[text.index("\n  chip ") + 1:].split("\n\n")[0].splitlines()
    assert "matmul time vs peers" in rows[0] and "bandwidth time vs peers" in rows[0]
    header = rows[0]
    for title in ("matmul TFLOP/s p10", "matmul time vs peers", "bandwidth GB/s"):
        start = header.index(title)
        assert all(row[start - 2:start] == "  " and row[start] != " " for row in rows[1:]), (title, rows)


def test_the_peak_finding_writes_the_table_s_unit():
    subject = example_input(4, level=2, hbm=example_timings([1.0] * 4, unit="gbps", work=720e9))
    finding = {f.id: f for f in evaluate_rules(subject, load_rules("diag-rules"))}["hbm-peak"]
    assert " GB/s" in finding.message and "gbps" not in finding.message


def test_the_help_says_the_bandwidth_array_is_per_device_and_where_the_chip_count_comes_from():
    done = subprocess.run([sys.executable, "-m", "tpudoctor", "diag", "--help"], capture_output=True, text=True,
                          timeout=60)
    words = " ".join(done.stdout.split())
    assert "array on each device" in words and "TPU_ACCELERATOR_TYPE" in words


# N29: a duration error names its flag ----------------------------------------------------------------------------
def test_a_duration_error_names_its_flag():
    from tpudoctor.config import parse_duration_s

    with pytest.raises(UsageError, match="^--soak: not a usable duration"):
        parse_duration_s("-5m", what="--soak")
    assert "--soak" in cli("-r", "3", "--soak=-5m").stderr
    assert "--soak" in cli("-r", "3", "--soak", "0s").stderr

