"""Step 3: the compatibility table, the facts read from package metadata, the checks, the probe."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from tpudoctor import cli
from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.families import load_registry
from tpudoctor.findings import Status
from tpudoctor.providers.runtime_env import (
    FrameworkPinsProvider,
    RuntimeTargetProvider,
    libtpu_pins,
)
from tpudoctor.runtime_compat import declared_pin, load_compat, satisfies
from tpudoctor.schema import validate
from tpudoctor.testing import conformance_problems, run_check

COMPAT = load_compat()


def test_runtime_checks_conform():
    for cls in load_registry().check_classes():
        if cls.id.startswith("RUNTIME-"):
            assert conformance_problems(cls) == [], cls.id


@pytest.mark.parametrize(("accelerator_type", "generation", "chips", "hosts", "local_devices"), [
    ("v2-8", "v2", 4, 1, 8), ("v3-32", "v3", 16, 4, 8), ("v4-8", "v4", 4, 1, 4), ("v4-32", "v4", 16, 4, 4),
    ("v5p-8", "v5p", 4, 1, 4), ("v5litepod-8", "v5e", 8, 1, 8), ("v5litepod-16", "v5e", 16, 4, 4),
    ("v6e-8", "v6e", 8, 1, 8), ("v6e-4", "v6e", 4, 1, 4), ("tpu7x-8", "tpu7x", 4, 1, 8),
])
def test_accelerator_types(accelerator_type, generation, chips, hosts, local_devices):
    acc = COMPAT.accelerator(accelerator_type)
    assert (acc.generation.name, acc.chips, acc.hosts, acc.local_devices) == (generation, chips, hosts, local_devices)


def test_unknown_accelerator_type():
    assert COMPAT.accelerator("v99-8") is None and COMPAT.accelerator("gpu") is None


@pytest.mark.parametrize(("runtime_version", "generation", "suitable"), [
    ("v2-alpha-tpuv6e", "v6e", True), ("v2-alpha-tpuv6e", "v5e", False), ("v2-alpha-tpuv5-lite", "v5e", True),
    ("v2-alpha-tpuv5", "v5p", True), ("tpu-ubuntu2204-base", "v4", True), ("tpu-ubuntu2204-base", "v6e", False),
    ("tpu-vm-tf-2.16.1-pjrt", "v6e", True), ("tpu-vm-tf-2.16.1-pod-pjrt", "v4", True),
    ("tpu-vm-tf-2.16.1", "v4", False),  # from 2.15 the device API must be named
    ("tpu-vm-tf-2.14.0", "v5e", False), ("tpu-vm-tf-2.14.0", "v3", True),
    ("tpu-vm-tf-2.10.0", "v4", False), ("tpu-vm-tf-2.10.0-pod-v4", "v4", True),
    ("tpu-vm-tf-2.18.0-pjrt-v5e-and-v6", "v6e", True), ("tpu-vm-tf-2.18.0-pjrt-v5e-and-v6", "v5p", False),
    ("tpu-vm-tf-2.18.0-pod-pjrt-v5p-and-below", "v5p", True), ("tpu-vm-tf-2.16.1-pjrt", "tpu7x", False),
])
def test_runtime_image_verdicts(runtime_version, generation, suitable):
    verdict = COMPAT.image_verdict(runtime_version, COMPAT.generations[generation])
    assert verdict.known and verdict.suitable is suitable, verdict.reason


def test_tf_image_names_parse():
    image = COMPAT.parse_tf_image("tpu-vm-tf-2.18.0-pod-pjrt-v5p-and-below")
    assert (image.tensorflow_version, image.pod, image.device_api, image.suffix) == ("2.18.0", True, "pjrt", "v5p-and-below")
    assert COMPAT.parse_tf_image("v2-alpha-tpuv6e") is None


def test_declared_pin_reads_extras_and_base_requirements():
    requires = ['jaxlib<=0.7.2,>=0.7.2', 'libtpu==0.0.23; extra == "tpu"', 'jaxlib==0.7.2; extra == "cuda"']
    assert declared_pin(requires, "tpu", ("libtpu", "libtpu-nightly")) == "libtpu==0.0.23"
    assert declared_pin(requires, None, ("jaxlib",)) == "jaxlib<=0.7.2,>=0.7.2"
    assert declared_pin(requires, None, ("libtpu",)) is None
    assert satisfies("libtpu==0.0.42.*", {"libtpu": "0.0.42.1"}) is True
    assert satisfies("libtpu==0.0.42.*", {"libtpu": "0.0.52"}) is False
    assert satisfies("libtpu==0.0.42.*", {}) is None


def test_installed_jax_metadata_pin_wins_over_the_table():
    version = metadata.version("jax")
    pins = libtpu_pins({"jax": version})
    assert pins["jax"]["source"] == f"jax {version} package metadata ('tpu' extra)"
    assert pins["jax"]["requirement"].startswith("libtpu")


def test_table_pin_used_when_metadata_has_none(monkeypatch):
    monkeypatch.setattr("tpudoctor.providers.runtime_env.metadata.requires", lambda name: [])
    pins = libtpu_pins({"jax": "0.7.2", "torch-xla": "2.8.0", "tensorflow-tpu": "2.18.0"})
    assert pins["jax"] == {"framework_version": "0.7.2", "requirement": "libtpu==0.0.23",
                           "source": f"tpudoctor runtime table v{COMPAT.version}"}
    assert pins["torch-xla"]["requirement"] == "libtpu==0.0.17"
    assert pins["tensorflow-tpu"]["requirement"] is None


def test_runtime_target_prefers_the_node_then_the_metadata_server():
    ctx = RunContext()
    node = {"runtime_version": "v2-alpha-tpuv6e", "accelerator_type": "v6e-8"}
    vm = {"accelerator_type": "v6e-8", "runtime_version": None, "tpu_env": {}}
    got = RuntimeTargetProvider().gather(ctx, Facts({"tpu.node": node, "metadata.tpu_vm": vm}))["runtime.target"]
    assert got == {"runtime_version": "v2-alpha-tpuv6e", "accelerator_type": "v6e-8", "generation": "v6e",
                   "on_tpu_vm": True, "source": "tpu.node"}
    got = RuntimeTargetProvider().gather(ctx, Facts({"tpu.node": Unavailable("no --tpu"), "metadata.tpu_vm": vm}))
    assert got["runtime.target"]["source"] == "metadata.tpu_vm" and got["runtime.target"]["runtime_version"] is None
    remote = RuntimeTargetProvider().gather(ctx, Facts({"tpu.node": node, "metadata.tpu_vm": Unavailable("no MDS")}))
    assert remote["runtime.target"]["on_tpu_vm"] is False
    none = RuntimeTargetProvider().gather(ctx, Facts({}))["runtime.target"]
    assert isinstance(none, Unavailable) and "--tpu" in none.reason


def _run_step3(preset: dict) -> dict:
    """Evaluate the step 3 checks on simulated facts of a TPU VM (the providers derive the rest)."""
    facts = dict(preset)
    facts.update(RuntimeTargetProvider().gather(RunContext(), Facts(facts)))
    facts.setdefault("runtime.libtpu_pins", {})
    facts.setdefault("runtime.env", {})
    facts.setdefault("runtime.jaxlib_requirement", Unavailable("not simulated"))
    facts.setdefault("runtime.probe", Unavailable("not requested"))
    checks = [c for c in load_registry().check_classes() if c.id.startswith("RUNTIME-")]
    return {c.id: run_check(c, facts) for c in checks}


def test_a_tpu_vm_with_jax_but_no_libtpu_fails_and_a_bad_image_fails():
    preset = {
        "packages.installed": {"jax": "0.7.2", "jaxlib": "0.7.2", "tensorflow-cpu": "2.16.1"},
        "python.version": "3.11.7",
        "tpu.node": {"runtime_version": "v2-alpha-tpuv6e", "accelerator_type": "v5litepod-8"},
        "metadata.tpu_vm": {"accelerator_type": "v5litepod-8", "tpu_env": {}},
    }
    results = _run_step3(preset)
    assert results["RUNTIME-006"].status is Status.FAIL
    assert "jax 0.7.2 has no libtpu" in results["RUNTIME-006"].message
    assert "tensorflow-cpu" in results["RUNTIME-006"].message
    assert results["RUNTIME-007"].status is Status.FAIL
    assert "meant for v6e, not v5e" in results["RUNTIME-007"].message
    assert results["RUNTIME-003"].status is Status.SKIP  # a non-TF image fixes no TF version


def test_tf_image_with_upgraded_tensorflow_and_two_loaders():
    preset = {
        "packages.installed": {"tensorflow": "2.18.0", "jax": "0.7.2", "jaxlib": "0.7.2", "libtpu": "0.0.23"},
        "python.version": "3.11.7",
        "tpu.node": {"runtime_version": "tpu-vm-tf-2.16.1-pjrt", "accelerator_type": "v4-8"},
        "metadata.tpu_vm": {"accelerator_type": "v4-8", "tpu_env": {}},
        "runtime.env": {},
        "runtime.libtpu_pins": {"jax": {"framework_version": "0.7.2", "requirement": "libtpu==0.0.23", "source": "metadata"}},
    }
    results = _run_step3(preset)
    assert results["RUNTIME-004"].status is Status.PASS
    assert results["RUNTIME-003"].status is Status.FAIL
    assert results["RUNTIME-003"].evidence["tensorflow_in_image"] == "2.16.1"
    assert results["RUNTIME-005"].status is Status.WARN
    assert "export TPU_LOAD_LIBRARY=0" in results["RUNTIME-005"].remediation.commands
    assert results["RUNTIME-008"].status is Status.WARN  # 2.18.0 reported broken on TPU
    assert results["RUNTIME-007"].status is Status.PASS


def test_cli_step3_on_this_machine_passes_or_skips(capsys):
    code = cli.main(["check", "--step", "3", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    validate(doc, "check_report")
    by_id = {r["id"]: r for r in doc["results"]}
    assert code == 0 and doc["summary"]["counts"]["FAIL"] == 0 and doc["summary"]["counts"]["ERROR"] == 0
    assert by_id["RUNTIME-002"]["status"] == "PASS" and "jax" in by_id["RUNTIME-002"]["message"]
    assert by_id["RUNTIME-010"]["status"] == "PASS"
    for check_id in ("RUNTIME-003", "RUNTIME-006", "RUNTIME-007"):
        assert by_id[check_id]["status"] == "SKIP" and "--tpu" in by_id[check_id]["skip_reason"]
    assert by_id["RUNTIME-009"]["status"] == "SKIP" and "--probe" in by_id["RUNTIME-009"]["skip_reason"]


def test_pins_provider_reports_env_and_jaxlib(monkeypatch):
    monkeypatch.setenv("TPU_LOAD_LIBRARY", "0")
    got = FrameworkPinsProvider().gather(RunContext(), Facts({"packages.installed": {"jax": metadata.version("jax")}}))
    assert got["runtime.env"]["TPU_LOAD_LIBRARY"] == "0"
    assert got["runtime.jaxlib_requirement"].startswith("jaxlib")


@pytest.mark.slow
def test_probe_runs_the_frameworks_for_real_and_reports_cpu_devices(capsys):
    code = cli.main(["check", "RUNTIME-009", "--probe", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    (result,) = doc["results"]
    assert code == 0 and result["status"] == "SKIP"
    assert "not a TPU VM" in result["message"] and "jax lists 1 cpu device(s)" in result["message"]
    probes = result["evidence"]["probes"]
    assert probes["jax"]["ok"] and probes["jax"]["platform"] == "cpu"
    assert probes["tensorflow"]["ok"] and probes["tensorflow"]["tpu_device_count"] == 0
    assert probes["tensorflow"]["tpu_initialized"] is False  # TPUClusterResolver(tpu='local') finds no TPU here


def test_probe_subprocess_timeout_and_stderr_diagnosis():
    from tpudoctor.providers.framework_probe import run_probe

    hung = run_probe("jax", "import time; time.sleep(30)", timeout_s=1.0)
    assert hung["timed_out"] and not hung["ok"] and "within 1s" in hung["error"]
    busy = run_probe("jax", (
        "import sys; sys.stderr.write(\"RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is "
        "already in use by process with pid 4242. Not attempting to load libtpu.so in this process.\\n\"); sys.exit(1)"),
        timeout_s=30.0)
    assert busy["returncode"] == 1 and not busy["ok"]
    assert busy["diagnosis"]["id"] == "tpu-in-use" and busy["diagnosis"]["evidence"]["pid"] == 4242
    v4 = {"runtime_version": "tpu-ubuntu2204-base", "accelerator_type": "v4-8", "generation": "v4", "on_tpu_vm": True}
    result = run_check(load_registry().checks["RUNTIME-009"], {"runtime.probe": {"jax": busy}, "runtime.target": v4})
    assert result.status is Status.WARN and "pid 4242" in result.message
    result = run_check(load_registry().checks["RUNTIME-009"], {"runtime.probe": {"jax": hung}, "runtime.target": v4})
    assert result.status is Status.FAIL and "within 1s" in result.message
