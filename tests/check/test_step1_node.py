"""Step 1 against the loopback TPU API and metadata fakes, through the real google-cloud-tpu client."""

from __future__ import annotations

import pytest
from _step12_helpers import commands, run_ids

from tpudoctor.findings import Status
from tpudoctor.testing.fake_tpu_api import make_node
from tpudoctor.testing.loopback import free_port

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

STATES = {
    # state: (words the verdict must contain, gcloud verbs its fix must contain)
    "CREATING": ("still being created", ["describe"]),
    "STARTING": ("is starting", ["describe"]),
    "RESTARTING": ("is restarting", ["describe"]),
    "REIMAGING": ("reimaged", ["describe"]),
    "STOPPING": ("is stopping", ["describe", "start"]),
    "STOPPED": ("is stopped", ["start"]),
    "DELETING": ("being deleted", ["create"]),
    "REPAIRING": ("being repaired", ["describe"]),
    "PREEMPTED": ("was preempted", ["delete", "create"]),
    "TERMINATED": ("was terminated", ["delete", "create"]),
    "HIDING": ("being hidden", ["describe"]),
    "HIDDEN": ("is hidden", ["describe"]),
    "UNHIDING": ("being unhidden", ["describe"]),
    "UNKNOWN": ("unknown state after a failed repair", ["delete", "create"]),
}


def test_ready_node_passes(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    results, _ = run_ids(["NODE-001", "NODE-002"])
    assert results["NODE-001"].status is Status.PASS
    assert results["NODE-001"].message == "my-tpu (v4-8, us-central2-b) is READY"
    assert results["NODE-002"].status is Status.PASS


@pytest.mark.parametrize("state", sorted(STATES))
def test_every_other_state_has_its_own_verdict_and_next_step(fake_tpu_api, state):
    words, verbs = STATES[state]
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", state=state))
    results, _ = run_ids(["NODE-001", "NODE-002"])
    node = results["NODE-001"]
    assert node.status is Status.FAIL
    assert words in node.message and f"(state {state})" in node.message
    for verb in verbs:
        assert any(c.startswith(f"gcloud compute tpus tpu-vm {verb} my-tpu --zone us-central2-b --project p")
                   for c in commands(node)), (verb, commands(node))
    assert results["NODE-002"].status is Status.SKIP
    assert results["NODE-002"].skip_reason == "blocked by NODE-001 (FAIL)"


@pytest.mark.parametrize("health,status", [
    ("HEALTHY", Status.PASS), ("TIMEOUT", Status.FAIL), ("UNHEALTHY_TENSORFLOW", Status.FAIL),
    ("UNHEALTHY_MAINTENANCE", Status.WARN), (None, Status.PASS),
])
def test_every_health_value(fake_tpu_api, health, status):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", health=health,
                                    health_description="worker 0 stopped answering" if health else ""))
    result = run_ids(["NODE-002"])[0]["NODE-002"]
    assert result.status is status, result.message
    if status is not Status.PASS:
        assert health in result.message
        assert '"worker 0 stopped answering"' in result.message  # quoted
        assert result.remediation.commands


@pytest.mark.parametrize("symptom,status", [
    ("HBM_OUT_OF_MEMORY", Status.FAIL), ("OUT_OF_MEMORY", Status.FAIL), ("LOW_MEMORY", Status.WARN),
    ("EXECUTE_TIMED_OUT", Status.FAIL), ("MESH_BUILD_FAIL", Status.FAIL), ("PROJECT_ABUSE", Status.FAIL),
])
def test_every_symptom(fake_tpu_api, symptom, status):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", symptoms=[
        {"type": symptom, "description": "seen at step 1200", "worker_id": 1}]))
    result = run_ids(["NODE-002"])[0]["NODE-002"]
    assert result.status is status
    assert f"symptom {symptom} on worker 1" in result.message and '"seen at step 1200"' in result.message
    assert result.evidence["symptoms"][0]["type"] == symptom


def test_403_names_permission_and_role(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    fake_tpu_api.fail(403, permission="tpu.nodes.get")
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.FAIL
    assert "lacks tpu.nodes.get (granted by roles/tpu.viewer)" in result.message
    assert commands(result)[0].startswith("gcloud projects add-iam-policy-binding p --member=")
    assert commands(result)[0].endswith("--role=roles/tpu.viewer")


def test_404_lists_the_nodes_in_the_zone(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "train-a"))
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "train-b"))
    fake_tpu_api.add_node(make_node("p", "europe-west4-a", "elsewhere"))
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.FAIL
    assert "no TPU node named my-tpu in zone us-central2-b of project p" in result.message
    assert "nodes in us-central2-b: train-a, train-b" in result.message
    assert "gcloud compute tpus tpu-vm list --zone us-central2-b --project p" in commands(result)


def test_429_then_success_is_retried(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    fake_tpu_api.fail(429, times=1)
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.PASS
    gets = [r for r in fake_tpu_api.requests if r.endswith("/nodes/my-tpu")]
    assert len(gets) == 2


def test_500_is_retried_then_error(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    fake_tpu_api.fail(500, times=10)
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.ERROR
    assert "answered HTTP 500 after 3 attempts" in result.message
    assert len([r for r in fake_tpu_api.requests if r.endswith("/nodes/my-tpu")]) == 3


def test_timeout_is_an_error_not_a_hang(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    fake_tpu_api.fail(200, times=1, delay_s=2.0)
    result = run_ids(["NODE-001"], api_timeout_s=0.3)[0]["NODE-001"]
    assert result.status is Status.ERROR
    assert "did not answer in time" in result.message
    assert result.evidence["failure"]["kind"] == "timeout"


def test_connection_refused(gcp_env, monkeypatch):
    monkeypatch.setenv("TPUDOCTOR_TPU_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.ERROR
    assert "cannot reach the Cloud TPU API" in result.message and "connection refused" in result.message


def test_no_credentials_says_how_to_set_up_adc(gcp_env):
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.FAIL
    assert "no Google Cloud credentials" in result.message
    assert "gcloud auth application-default login" in commands(result)


def test_tpu7x_is_not_reported_as_missing(fake_tpu_api, fake_metadata):
    fake_metadata.tree["instance"]["attributes"]["accelerator-type"] = "tpu7x-8"
    result = run_ids(["NODE-001"])[0]["NODE-001"]
    assert result.status is Status.SKIP
    assert "does not serve TPU7x" in result.message
    assert fake_tpu_api.requests == []


def test_metadata_fills_the_target_on_a_tpu_vm(fake_tpu_api, fake_metadata):
    from tpudoctor.context import CheckOptions, RunContext
    from tpudoctor.families import load_registry
    from tpudoctor.findings import Target
    from tpudoctor.runner import Runner

    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    registry = load_registry(plugins=False)
    given = Target(worker="0")
    ctx = RunContext(target=given, options=CheckOptions(api_timeout_s=5.0), run_timeout_s=120)
    runner = Runner(registry, ctx)
    report = runner.run([registry.checks["NODE-001"]])
    assert report.results[0].status is Status.PASS
    # The report names the node the metadata server pointed to; the given target is a setting, never written.
    assert report.target == Target(project="p", zone="us-central2-b", tpu="my-tpu", worker="0")
    assert ctx.target is given and given == Target(worker="0")
    assert runner.store.facts.value("tpu.target")["sources"] == {
        "project": "metadata server", "zone": "metadata server", "tpu": "metadata server"}


@pytest.mark.parametrize("state,status", [("ACTIVE", Status.PASS), ("FAILED", Status.FAIL),
                                          ("SUSPENDED", Status.FAIL), ("WAITING_FOR_RESOURCES", Status.WARN)])
def test_queued_resource_state(fake_tpu_api, state, status):
    qr = fake_tpu_api.add_queued_resource("p", "us-central2-b", "my-qr", state,
                                          failed_error="no capacity in zone" if state == "FAILED" else None)
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", queued_resource=qr))
    result = run_ids(["NODE-007"])[0]["NODE-007"]
    assert result.status is status
    assert state in result.message
    if state == "FAILED":
        assert "no capacity in zone" in result.message
