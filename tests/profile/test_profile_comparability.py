"""Comparability first: device kind, devices, hosts, versions, step method and program of two reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from paths import TESTS
from shared_data import SHARED_DATA

from tpudoctor.cli import main
from tpudoctor.profile.comparability import (
    CaptureIdentity,
    capture_versions,
    check_comparability,
    compare_documents,
    identity_from_document,
)

FIXTURES = TESTS / "fixtures" / "profiles"
SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
V6E = SHARED / "xprof_tpu_inference_2.xplane.pb"
needs_v6e = pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")


def _report(path: Path, tmp_path: Path) -> dict:
    out = tmp_path / f"{path.name}.json"
    assert main(["profile", "analyze", str(path), "--format", "json", "-o", str(out)]) in (0, 1)  # 1: FAIL findings; the report is written either way
    return json.loads(out.read_text())


def test_same_capture_is_comparable(tmp_path):
    doc = _report(FIXTURES / "jax_steady", tmp_path)
    result = compare_documents(doc, doc)
    assert result.comparable and not result.reasons and not result.notes
    assert result.baseline.device_type == "cpu" and result.baseline.topology == "1x0"
    assert result.baseline.step_program_fingerprint is not None


def test_step_method_and_program_differences_are_noted_not_blocking(tmp_path):
    steady = _report(FIXTURES / "jax_steady", tmp_path)
    annotated = _report(FIXTURES / "jax_compute_bound", tmp_path)
    result = compare_documents(steady, annotated)
    assert result.comparable
    assert {d.field for d in result.differences} >= {"step_method"}
    assert any("steps were found differently" in note for note in result.notes)


def test_more_hosts_is_not_comparable(tmp_path):
    run = tmp_path / "logdir" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for worker in ("worker-0", "worker-1"):
        shutil.copyfile(FIXTURES / "jax_compute_bound" / "localhost.xplane.pb", run / f"{worker}.xplane.pb")
    two_hosts = _report(tmp_path / "logdir", tmp_path)
    one_host = _report(FIXTURES / "jax_compute_bound", tmp_path)
    result = compare_documents(one_host, two_hosts)
    assert not result.comparable
    assert {d.field for d in result.differences if d.blocking} == {"n_hosts", "topology"}
    assert any("number of hosts: 1 in the baseline, 2 in the candidate" in r for r in result.reasons)


@pytest.mark.needs_shared_data
@needs_v6e
def test_tpu_against_cpu_is_not_comparable(tmp_path):
    shutil.copyfile(V6E, tmp_path / "v6e.xplane.pb")
    tpu = _report(tmp_path / "v6e.xplane.pb", tmp_path)
    cpu = _report(FIXTURES / "jax_steady", tmp_path)
    identity = identity_from_document(tpu)
    assert (identity.device_type, identity.device_kind, identity.n_devices, identity.topology) == (
        "tpu", "TPU v6 Lite", 4, "1x4")
    assert identity.step_program_fingerprint == "12190760917235803885"
    result = compare_documents(tpu, cpu)
    assert not result.comparable
    assert result.reasons[0].startswith("different device type: tpu in the baseline, cpu in the candidate")
    assert any("device kind: TPU v6 Lite in the baseline, CPU" in r for r in result.reasons)


@pytest.mark.needs_shared_data
@needs_v6e
def test_fewer_tpu_cores_is_not_comparable(tmp_path):
    from tpudoctor.captures.schema import message_class

    space = message_class("XSpace").FromString(V6E.read_bytes())
    keep = [p for p in space.planes if p.name not in ("/device:TPU:2", "/device:TPU:3")]  # a 2-core slice
    del space.planes[:]
    space.planes.extend(keep)
    (tmp_path / "two.xplane.pb").write_bytes(space.SerializeToString())
    shutil.copyfile(V6E, tmp_path / "four.xplane.pb")
    result = compare_documents(_report(tmp_path / "four.xplane.pb", tmp_path),
                               _report(tmp_path / "two.xplane.pb", tmp_path))
    assert not result.comparable
    assert {d.field for d in result.differences if d.blocking} == {"n_devices", "topology"}


def _identity(**kw) -> CaptureIdentity:
    base = {"device_type": "tpu", "device_kind": "TPU v5 lite", "n_hosts": 2, "n_devices": 8, "topology": "2x4",
            "framework": "jax", "framework_version": "0.4.30", "libtpu_version": "0.0.1", "step_method":
            "device-steps-line", "step_program": "jit_train_step(42)"}
    return CaptureIdentity(**{**base, **kw})


def test_versions_and_programs_are_notes_and_unknowns_are_listed():
    result = check_comparability(_identity(), _identity(libtpu_version="0.0.2", step_program="jit_train_step(43)",
                                                        framework_version=None))
    assert result.comparable
    assert [d.field for d in result.differences] == ["libtpu_version", "step_program_fingerprint"]
    assert any("different compiled program (42 vs 43)" in n for n in result.notes)
    assert result.unknown_fields == ("framework_version",)
    assert result.to_dict()["baseline"]["device_kind"] == "TPU v5 lite"


def test_versions_come_from_the_capture(tmp_path):
    import tpudoctor.profile

    host = next(iter(tpudoctor.profile.load(str(FIXTURES / "jax_steady")).hosts.values()))
    versions = capture_versions(host)
    assert versions == {"framework": "0.10.2"}  # the JAX that made the fixture; CPU: no libtpu
    doc = _report(FIXTURES / "jax_steady", tmp_path)
    assert doc["versions"] == versions  # the report carries them (schema 2.1)
    identity = identity_from_document(doc, versions)
    assert identity.framework == "jax" and identity.framework_version == "0.10.2"
    assert identity_from_document({**doc, "versions": {}}, versions) == identity  # a 2.0 report: from the capture
    newer = identity_from_document({**doc, "versions": {"framework": "0.10.3"}})
    result = check_comparability(identity, newer)
    assert result.comparable and result.notes == ("different framework version: 0.10.2 vs 0.10.3",)
    tf_host = next(iter(tpudoctor.profile.load(str(FIXTURES / "tf_eager")).hosts.values()))
    assert capture_versions(tf_host) == {}  # TensorFlow's capture states none: not compared
