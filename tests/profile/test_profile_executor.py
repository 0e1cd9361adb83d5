"""One executor for the per-host map: this process, local worker processes, or a Dask cluster
(tests/profile/test_profile_cluster.py runs the cluster on a real LocalCluster)."""

from __future__ import annotations

import os

import pytest

from tpudoctor.captures.capture_files import HostFile
from tpudoctor.errors import InputError
from tpudoctor.profile import executor
from tpudoctor.profile.executor import (
    DaskCluster,
    HostTask,
    InProcess,
    LocalProcesses,
    executor_for,
)


def _shout(host_file: HostFile, suffix: str) -> str:
    """A task: the host name in capitals; some host names fail the way real hosts do."""
    if host_file.hostname == "unreadable":
        raise InputError(f"cannot read {host_file.location}: Permission denied", hint="check the file's mode")
    if host_file.hostname == "buggy":
        raise KeyError("plane_id")
    if host_file.hostname == "killed":
        os._exit(3)  # the worker process dies, as one killed for memory does
    return host_file.hostname.upper() + suffix


def _environment(host_file: HostFile) -> str | None:
    return os.environ.get("STORAGE_EMULATOR_HOST")


SHOUT = HostTask(_shout, key="shout", noun="test", verb="shouted")
HOSTS = [HostFile(name, f"/captures/{name}.xplane.pb") for name in ("w0", "unreadable", "buggy", "w3")]
EXPECTED = {
    "w0": "W0!",
    "unreadable": "cannot read /captures/unreadable.xplane.pb: Permission denied (check the file's mode)",
    "buggy": "could not be shouted: KeyError: 'plane_id'",
    "w3": "W3!",
}


def test_executor_for_picks_this_process_local_processes_or_the_cluster(tmp_path, monkeypatch):
    hosts = []
    for k in range(8):
        (tmp_path / f"w{k}.xplane.pb").write_bytes(b"\0" * 1000)
        hosts.append(HostFile(f"w{k}", str(tmp_path / f"w{k}.xplane.pb")))
    assert isinstance(executor_for(hosts[:1]), InProcess)
    assert isinstance(executor_for(hosts), InProcess)  # 8 kB in all: starting processes costs more
    monkeypatch.setattr(executor, "IN_PROCESS_MAX_BYTES", 8000)
    assert isinstance(executor_for(hosts[:7]), InProcess)
    assert executor_for(hosts, max_workers=3) == LocalProcesses(3)
    assert isinstance(executor_for(hosts, max_workers=1), InProcess)
    remote = [HostFile(f"w{k}", f"gs://bucket/run/w{k}.xplane.pb") for k in range(2)]
    assert executor_for(remote, max_workers=64) == LocalProcesses(2)  # never more processes than hosts
    assert executor_for(hosts[:1], cluster="tcp://10.0.0.2:8786", cluster_timeout_s=5) == DaskCluster(
        "tcp://10.0.0.2:8786", connect_timeout_s=5)


@pytest.mark.parametrize("executor", [InProcess(), LocalProcesses(2)], ids=["in-process", "local-processes"])
def test_each_host_gets_its_result_or_why_it_has_none(executor):
    assert dict((h.hostname, outcome) for h, outcome in executor.map(SHOUT, HOSTS, "!")) == EXPECTED


def test_a_worker_process_that_dies_is_that_hosts_message():
    hosts = [HostFile("killed", "/captures/killed.xplane.pb")] * 2
    outcomes = [outcome for _, outcome in LocalProcesses(2).map(SHOUT, hosts, "!")]
    assert all(o.startswith("the test process failed: BrokenProcessPool") for o in outcomes), outcomes


def test_worker_processes_see_the_storage_endpoint_of_the_caller(monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:4443")
    task = HostTask(_environment, key="env", noun="test", verb="read")
    outcomes = [o for _, o in LocalProcesses(2).map(task, HOSTS[:2])]
    assert outcomes == ["http://127.0.0.1:4443"] * 2

