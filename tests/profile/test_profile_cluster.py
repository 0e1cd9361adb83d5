"""The per-host map on a real Dask distributed cluster (a LocalCluster on loopback) gives the local report.

One LocalCluster per module (scheduler and two single-threaded workers in this process, so that the
workers see the storage emulator through STORAGE_EMULATOR_HOST as a remote worker sees its own
environment). Workers get host file locations only and read the captures themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from paths import REPO, TESTS

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'tpudoctor[dask]')")

import tpudoctor.profile  # noqa: E402
from tpudoctor.cli import main  # noqa: E402
from tpudoctor.errors import UsageError  # noqa: E402
from tpudoctor.profile.cluster import check_worker_versions, probe_workers  # noqa: E402
from tpudoctor.testing.loopback import free_port  # noqa: E402

FIXTURES = TESTS / "fixtures" / "profiles"
SLOW_HOST = FIXTURES / "multihost_slow_host"


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as local_cluster:
        yield local_cluster


def _without_timings(document: dict) -> dict:
    """The report document apart from how long the run took."""
    return json.loads(json.dumps(document), object_hook=lambda d: {k: v for k, v in d.items()
                                                                     if k not in ("duration_s", "elapsed_s")})


def test_the_cluster_report_is_the_local_report(cluster):
    started = time.perf_counter()
    local = tpudoctor.profile.analyze(str(SLOW_HOST))
    local_s = time.perf_counter() - started
    messages = []
    started = time.perf_counter()
    remote = tpudoctor.profile.analyze(str(SLOW_HOST), cluster=cluster.scheduler_address, on_progress=messages.append)
    cluster_s = time.perf_counter() - started
    print(f"multihost_slow_host: local processes {local_s:.2f}s, LocalCluster {cluster_s:.2f}s")
    assert len(remote.hosts) == 4 and not remote.failed_hosts
    assert remote.straggler == local.straggler and remote.straggler is not None
    assert _without_timings(remote.to_dict()) == _without_timings(local.to_dict())
    # progress names each host with hosts done / total
    assert [m for m in messages if m.startswith("analysed ")][-1].endswith("(4/4 hosts)")
    assert sum("/4 hosts)" in m for m in messages) == 4
    # the scheduler ran the map as tasks on its workers
    assert any("tpudoctor-analyze-host" in prefix for prefix in cluster.scheduler.task_prefixes)


def _ran_on_cluster(cluster, argv: list[str], capsys) -> tuple[bool, dict]:
    """Run the CLI; whether the scheduler ran any task meanwhile, and the JSON report."""
    before = cluster.scheduler.transition_counter
    assert main(argv) in (0, 1)  # 1: the capture's FAIL findings
    return cluster.scheduler.transition_counter > before, json.loads(capsys.readouterr().out)


def test_cli_cluster_flag_environment_and_config_file(cluster, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TPUDOCTOR_CLUSTER", raising=False)
    argv = ["profile", "analyze", str(SLOW_HOST), "--format", "json"]
    ran, local = _ran_on_cluster(cluster, argv, capsys)
    assert not ran  # nothing set: local processes
    ran, flagged = _ran_on_cluster(cluster, [*argv, "--cluster", cluster.scheduler_address], capsys)
    assert ran and _without_timings(flagged) == _without_timings(local)
    # the config file's `cluster` when neither flag nor environment says otherwise
    (tmp_path / "tpudoctor.toml").write_text(f'cluster = "{cluster.scheduler_address}"\n')
    ran, configured = _ran_on_cluster(cluster, argv, capsys)
    assert ran and _without_timings(configured) == _without_timings(local)
    # TPUDOCTOR_CLUSTER beats the config file, and the flag beats both (an unreachable address
    # where it must lose: using it would be exit 2)
    (tmp_path / "tpudoctor.toml").write_text('cluster = "tcp://127.0.0.1:9"\n')
    monkeypatch.setenv("TPUDOCTOR_CLUSTER", cluster.scheduler_address)
    ran, from_env = _ran_on_cluster(cluster, argv, capsys)
    assert ran and _without_timings(from_env) == _without_timings(local)
    monkeypatch.setenv("TPUDOCTOR_CLUSTER", "tcp://127.0.0.1:9")
    ran, from_flag = _ran_on_cluster(cluster, [*argv, "--cluster", cluster.scheduler_address], capsys)
    assert ran and _without_timings(from_flag) == _without_timings(local)


def test_compare_analyses_captures_on_the_cluster(cluster, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    balanced = FIXTURES / "multihost_balanced"
    code = main(["compare", str(balanced), str(SLOW_HOST), "--format", "json", "--cluster", cluster.scheduler_address])
    on_cluster = json.loads(capsys.readouterr().out)
    assert main(["compare", str(balanced), str(SLOW_HOST), "--format", "json"]) == code
    assert on_cluster == json.loads(capsys.readouterr().out)


def test_a_bad_host_fails_on_its_worker_and_the_others_are_reported(cluster, tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_11_30_12_00_00"
    run.mkdir(parents=True)
    source = next(SLOW_HOST.glob("plugins/profile/*"))
    for f in sorted(source.glob("*.xplane.pb"))[:2]:
        (run / f.name).write_bytes(f.read_bytes())
    (run / "broken.xplane.pb").write_bytes(b"\x00\x01garbage")
    local = tpudoctor.profile.analyze(str(tmp_path))
    remote = tpudoctor.profile.analyze(str(tmp_path), cluster=cluster.scheduler_address)
    assert list(remote.failed_hosts) == ["broken"] and sorted(remote.hosts) == sorted(local.hosts)
    assert remote.failed_hosts == local.failed_hosts



def test_workers_read_a_gcs_logdir_themselves(cluster, gcs_emulator, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bucket = gcs_emulator.create_bucket("profiles")
    run_dir = next(SLOW_HOST.glob("plugins/profile/*"))
    for f in sorted(run_dir.glob("*.xplane.pb")):
        bucket.blob(f"job/plugins/profile/{run_dir.name}/{f.name}").upload_from_string(f.read_bytes())
    sent = []
    real_map = distributed.Client.map

    def recording_map(self, func, *iterables, **kwargs):
        sent.extend(iterables[0])
        return real_map(self, func, *iterables, **kwargs)

    monkeypatch.setattr(distributed.Client, "map", recording_map)
    code = main(["profile", "analyze", "gs://profiles/job", "--format", "json", "--cluster", cluster.scheduler_address])
    remote = json.loads(capsys.readouterr().out)
    assert code == 1  # its FAIL findings
    # what went to the workers: gs:// locations, not bytes
    assert sorted(h.location for h in sent) == [f"gs://profiles/job/plugins/profile/{run_dir.name}/{f.name}"
                                                 for f in sorted(run_dir.glob("*.xplane.pb"))]
    # the same report as the local run of the same files, but for where they were read from
    local = json.dumps(tpudoctor.profile.analyze(str(SLOW_HOST)).to_dict()).replace(str(SLOW_HOST), "gs://profiles/job")
    assert _without_timings(remote) == _without_timings(json.loads(local))


def test_unreachable_scheduler_is_a_usage_error_in_bounded_time(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    port = free_port()  # nothing listens there
    started = time.monotonic()
    code = main(["profile", "analyze", str(SLOW_HOST), "--cluster", f"tcp://127.0.0.1:{port}"])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 30, (code, elapsed)
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in err and "Traceback" not in err
    assert "dask scheduler" in err  # says how to start one


@pytest.mark.parametrize("address", ["foo://10.0.0.2:8786", "tcp://", "inproc://x"])
def test_a_malformed_scheduler_address_is_a_usage_error(address, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "analyze", str(SLOW_HOST), "--cluster", address]) == 2
    err = capsys.readouterr().err
    assert "not a Dask scheduler address" in err and "tcp://10.0.0.2:8786" in err


def test_worker_versions_are_compared_with_this_client():
    check_worker_versions({"tcp://a:1": "0.9.0", "tcp://b:1": "0.9.0"}, "0.9.0")
    with pytest.raises(UsageError, match=r"another tpudoctor than this one \(0.9.0\): tcp://b:1 has 0.8.1") as other:
        check_worker_versions({"tcp://a:1": "0.9.0", "tcp://b:1": "0.8.1"}, "0.9.0")
    assert "tpudoctor==0.9.0" in other.value.hint


def test_the_probe_runs_on_every_live_worker(cluster):
    client = distributed.Client(cluster.scheduler_address, set_as_default=False)
    try:
        found = probe_workers(client)
    finally:
        client.close()
    assert found == {address: tpudoctor.__version__ for address in cluster.scheduler_info["workers"]}


def _start_worker(scheduler: str, tmp_path: Path, pythonpath: list[str]) -> subprocess.Popen:
    """A real ``dask worker`` process whose Python sees only ``pythonpath`` (-S: no site-packages,
    so not this checkout's editable tpudoctor either)."""
    return subprocess.Popen([sys.executable, "-S", "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1",
                             "--no-nanny", "--host", "127.0.0.1", "--dashboard-address", ":0"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=20)


@pytest.mark.timeout(240)
def test_workers_without_tpudoctor_or_with_another_version_are_refused(capsys, tmp_path, monkeypatch):
    import shutil
    import sysconfig

    monkeypatch.chdir(tmp_path)
    site_packages = sysconfig.get_paths()["purelib"]
    older = tmp_path / "older"  # another checkout of tpudoctor, one version behind
    shutil.copytree(REPO / "tpudoctor", older / "tpudoctor", ignore=shutil.ignore_patterns("__pycache__"))
    init = older / "tpudoctor" / "__init__.py"
    init.write_text(init.read_text().replace(f'__version__ = "{tpudoctor.__version__}"', '__version__ = "0.0.1"'))
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as scheduler_only:
        address = scheduler_only.scheduler_address
        argv = ["profile", "analyze", str(SLOW_HOST), "--cluster", address]
        for pythonpath, expected in (([site_packages], "cannot import tpudoctor"),
                                     ([str(older), site_packages], f"another tpudoctor than this one "
                                                                    f"({tpudoctor.__version__})")):
            worker = _start_worker(address, tmp_path, pythonpath)
            try:
                deadline = time.monotonic() + 90  # a worker process starting on a busy machine
                while not scheduler_only.scheduler.workers and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert main(argv) == 2
                err = capsys.readouterr().err
                assert expected in err and "Traceback" not in err, err
                assert f"install tpudoctor=={tpudoctor.__version__}" in err
            finally:
                _stop(worker)
            deadline = time.monotonic() + 30  # the scheduler forgets the stopped worker
            while scheduler_only.scheduler.workers and time.monotonic() < deadline:
                time.sleep(0.2)


def test_without_dask_the_flag_says_what_to_install(capsys, tmp_path):
    probe = textwrap.dedent(f"""
        import sys
        sys.modules["distributed"] = None  # as if Dask were not installed
        from tpudoctor.cli import main
        sys.exit(main(["profile", "analyze", {str(SLOW_HOST)!r}, "--cluster", "tcp://127.0.0.1:9"]))
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "needs Dask distributed" in result.stderr and "pip install 'tpudoctor[dask]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_and_local_analyze_do_not_import_dask(tmp_path):
    probe = textwrap.dedent(f"""
        import sys
        from tpudoctor.cli import main
        for argv in (["--help"], ["profile", "analyze", "--help"],
                     ["profile", "analyze", {str(SLOW_HOST)!r}, "--format", "json", "-o", "report.json"]):
            try:
                main(argv)
            except SystemExit:
                pass
        print("DASK=" + ",".join(m for m in ("dask", "distributed") if m in sys.modules), file=sys.stderr)
    """)
    env = {k: v for k, v in os.environ.items() if k != "TPUDOCTOR_CLUSTER"}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=180,
                            env=env)
    assert result.stderr.rstrip().endswith("DASK="), result.stderr
    assert (tmp_path / "report.json").is_file()
