"""Step 1 on a fake TPU VM: chips on the PCI bus, device holders, the idle-node warning."""

from __future__ import annotations

import pytest
from _step12_helpers import commands, run_ids

from tpudoctor.findings import Status
from tpudoctor.testing.fake_host import build_fake_tpu_host
from tpudoctor.testing.fake_metadata import tpu_vm_metadata
from tpudoctor.testing.fake_tpu_api import make_node

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]


def _machine(monkeypatch, tmp_path, gen, **kwargs):
    for key, value in build_fake_tpu_host(tmp_path / "host", gen, **kwargs).items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize("gen,accelerator_type,chips,status", [
    ("v4", "v4-8", 4, Status.PASS),
    ("v6e", "v6e-8", 8, Status.PASS),
    ("v4", "v4-8", 3, Status.FAIL),
    ("v6e", "v6e-8", 4, Status.FAIL),
    ("v4", "v6e-8", 4, Status.FAIL),  # generation mismatch
    ("v4", "v4-16", 4, Status.PASS),  # multi-host: 4 chips per host
])
def test_chips_visible_match_accelerator_type(fake_tpu_api, fake_metadata, monkeypatch, tmp_path,
                                              gen, accelerator_type, chips, status):
    fake_metadata.tree = tpu_vm_metadata("p", "us-central2-b", "my-tpu", accelerator_type)
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", accelerator_type=accelerator_type))
    _machine(monkeypatch, tmp_path, gen, chips=chips)
    result = run_ids(["NODE-004"])[0]["NODE-004"]
    assert result.status is status, result.message
    assert result.evidence["chips_found"] == chips
    if status is Status.FAIL:
        assert any(c.startswith("gcloud compute tpus tpu-vm create my-tpu") for c in commands(result))


def test_tpu_vm_without_chips_fails(fake_tpu_api, fake_metadata):
    result = run_ids(["NODE-004"])[0]["NODE-004"]
    assert result.status is Status.FAIL
    assert "0 of 4 v4 chips visible" in result.message


def test_tpu_held_by_another_process_names_pid_and_cmdline(fake_tpu_api, fake_metadata, monkeypatch, tmp_path):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    _machine(monkeypatch, tmp_path, "v4", chips=4, holders=[(4242, ["python3", "train.py", "--steps=10"], [0, 1])],
             lockfile_holders=[4242])
    results, _ = run_ids(["NODE-001", "NODE-005", "NODE-006"])
    held = results["NODE-005"]
    assert held.status is Status.FAIL
    assert "PID 4242 (python3 train.py --steps=10) holds /dev/accel0, /dev/accel1" in held.message
    assert commands(held)[0] == "kill 4242"
    assert commands(held)[1].startswith("rm -f ") and commands(held)[1].endswith("libtpu_lockfile")
    assert results["NODE-006"].status is Status.PASS


def test_vfio_devices_are_found_on_v6e(fake_tpu_api, fake_metadata, monkeypatch, tmp_path):
    _machine(monkeypatch, tmp_path, "v6e", chips=8, holders=[(77, ["python3", "jax_job.py"], [3])])
    result = run_ids(["NODE-005"])[0]["NODE-005"]
    assert result.status is Status.FAIL
    assert "PID 77 (python3 jax_job.py) holds /dev/vfio/13" in result.message


def test_ready_idle_node_warns_about_billing(fake_tpu_api, fake_metadata, monkeypatch, tmp_path):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    _machine(monkeypatch, tmp_path, "v4", chips=4)
    results, _ = run_ids(["NODE-001", "NODE-005", "NODE-006"])
    assert results["NODE-005"].status is Status.PASS
    idle = results["NODE-006"]
    assert idle.status is Status.WARN and "billed while idle" in idle.message
    assert commands(idle) == [
        "gcloud compute tpus tpu-vm stop my-tpu --zone us-central2-b --project p",
        "gcloud compute tpus tpu-vm delete my-tpu --zone us-central2-b --project p",
    ]


def test_spot_node_without_checkpoint_dir_warns(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", spot=True))
    results, _ = run_ids(["NODE-001", "NODE-003"])
    assert results["NODE-003"].status is Status.WARN
    assert "spot node and no checkpoint directory was given" in results["NODE-003"].message
    results, _ = run_ids(["NODE-001", "NODE-003"], checkpoint_dirs=["gs://bucket/ckpt"])
    assert results["NODE-003"].status is Status.PASS


def test_metadata_provider_reads_the_tpu_vm(fake_metadata):
    from tpudoctor.context import RunContext
    from tpudoctor.facts import Facts
    from tpudoctor.providers.metadata import MetadataProvider

    vm = MetadataProvider().gather(RunContext(), Facts())["metadata.tpu_vm"]
    assert vm["project"] == "p" and vm["zone"] == "us-central2-b" and vm["node_name"] == "my-tpu"
    assert vm["accelerator_type"] == "v4-8" and vm["agent_worker_number"] == 0
    assert vm["tpu_env"]["ACCELERATOR_TYPE"] == "v4-8"
    assert vm["service_account_email"] == "tpu-sa@p.iam.gserviceaccount.com"
    assert vm["worker_network_endpoints"] == ["10.130.0.2"]


def test_metadata_without_flavor_header_is_not_a_metadata_server(gcp_env, monkeypatch):
    """Link-local proxies answer too; only a Metadata-Flavor: Google answer counts."""
    from tpudoctor.context import RunContext
    from tpudoctor.facts import Facts, Unavailable
    from tpudoctor.providers.metadata import MetadataProvider
    from tpudoctor.testing.loopback import LoopbackServer, send

    class Proxy(LoopbackServer):
        def handle(self, handler, method):
            send(handler, 403, "resolve_deny: denied destination")

    with Proxy() as proxy:
        monkeypatch.setenv("GCE_METADATA_HOST", proxy.host)
        vm = MetadataProvider().gather(RunContext(), Facts())["metadata.tpu_vm"]
    assert isinstance(vm, Unavailable)
    assert vm.reason.startswith("not running on a Google Cloud VM (no metadata server)")
