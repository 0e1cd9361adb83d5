"""NODE-009 on a 64-worker node served by fake workers on loopback: dead, hung and slow workers are
named, and the probes run in parallel within a bounded time."""

from __future__ import annotations

import json
import time

from tpudoctor.cli import main
from tpudoctor.testing import conformance_problems
from tpudoctor.testing.fake_tpu_api import make_node
from tpudoctor.testing.fake_workers import FakeWorkers

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

ARGS = ["check", "NODE-001", "NODE-009", "--project", "p", "--zone", "us-central2-b", "--tpu", "my-tpu",
        "--format", "json", "--api-timeout", "1s"]


def _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers: FakeWorkers) -> tuple[dict, float]:
    node = make_node("p", "us-central2-b", "my-tpu", accelerator_type="v4-512", workers=workers.count)
    node["networkEndpoints"] = workers.endpoints()
    fake_tpu_api.add_node(node)
    monkeypatch.setenv("TPUDOCTOR_WORKER_PROBE_PORT", str(workers.port))
    started = time.monotonic()
    main(ARGS)
    elapsed_s = time.monotonic() - started
    results = {r["id"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    return results["NODE-009"], elapsed_s


def test_conforms():
    from tpudoctor.families import load_registry

    assert conformance_problems(load_registry(plugins=False).checks["NODE-009"]) == []


def test_64_healthy_workers_pass(fake_tpu_api, fake_metadata, monkeypatch, capsys):
    with FakeWorkers(64) as workers:
        result, elapsed_s = _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers)
    assert result["status"] == "PASS", result["message"]
    assert result["evidence"]["counts"] == {"ok": 64}
    assert "all 64 workers answered" in result["message"]


def test_64_workers_with_dead_hung_and_slow_ones_named_in_bounded_time(fake_tpu_api, fake_metadata, monkeypatch,
                                                                        capsys):
    with FakeWorkers(64, dead={5, 40}, hung={17}, slow={9}, slow_s=0.7) as workers:
        result, elapsed_s = _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers)
    assert result["status"] == "FAIL"
    bad = {w["worker"]: w["status"] for w in result["evidence"]["bad_workers"]}
    assert bad == {5: "refused", 40: "refused", 17: "hung"}
    assert "3 of 64 workers did not answer" in result["message"]
    assert "5 (127.0.0.7)" in result["message"] and "17 (127.0.0.19)" in result["message"]
    assert result["evidence"]["slow_workers"][0]["worker"] == 9
    assert any("--worker=17" in c for c in result["remediation"]["commands"])
    # 64 probes of up to 1 s each in a pool of 32: parallel, so far below 64 x 1 s.
    assert result["evidence"]["probe_elapsed_s"] < 2 * 1.0 + 1.0
    assert elapsed_s < 10


def test_only_slow_workers_warn(fake_tpu_api, fake_metadata, monkeypatch, capsys):
    with FakeWorkers(8, slow={3}, slow_s=0.7) as workers:
        result, _ = _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers)
    assert result["status"] == "WARN", result["message"]
    assert "1 of 8 workers answered slowly: 3 (127.0.0.5)" in result["message"]


def test_a_banner_later_than_the_probe_limit_is_a_hung_worker(fake_tpu_api, fake_metadata, monkeypatch, capsys):
    with FakeWorkers(8, slow={3}, slow_s=1.5) as workers:  # --api-timeout 1s caps each probe
        result, _ = _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers)
    assert result["status"] == "FAIL" and result["evidence"]["bad_workers"][0]["status"] == "hung"


def test_no_other_worker_answering_points_at_the_firewall(fake_tpu_api, fake_metadata, monkeypatch, capsys):
    with FakeWorkers(4, dead={1, 2, 3}) as workers:
        result, _ = _run(fake_tpu_api, fake_metadata, monkeypatch, capsys, workers)
    assert result["status"] == "FAIL" and "firewall" in result["remediation"]["text"]


def test_off_the_node_the_check_skips(fake_tpu_api, gcp_env, monkeypatch, capsys):
    node = make_node("p", "us-central2-b", "my-tpu", workers=4)
    fake_tpu_api.add_node(node)
    main(ARGS)
    result = {r["id"]: r for r in json.loads(capsys.readouterr().out)["results"]}["NODE-009"]
    assert result["status"] == "SKIP" and "run tpudoctor on a worker" in result["skip_reason"]


def test_single_host_skips(fake_tpu_api, fake_metadata, capsys):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu", workers=1))
    main(ARGS)
    result = {r["id"]: r for r in json.loads(capsys.readouterr().out)["results"]}["NODE-009"]
    assert result["status"] == "SKIP" and "single-host" in result["skip_reason"]
