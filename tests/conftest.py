from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """Under ``-n``, tests that share one slow module fixture (``@pytest.mark.xdist_group``) run on one
    worker, so it starts once; the others are spread as with xdist's default ``load``."""
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadgroup"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On an xdist worker, the group goes into each grouped test's id (``...@hung_jax_job``), which is how
    the controller's loadgroup scheduler sees it. xdist 3.8 writes it where pytest 9 no longer reads it
    (``Node._nodeid``), so it is done here, once; if that fails the tests still run, only spread."""
    if not hasattr(config, "workerinput"):
        return
    for item in items:
        groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                         for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(groups)
        if not groups or item.nodeid.endswith(suffix):
            continue
        try:
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)
        except (ImportError, AttributeError):
            item._nodeid = item.nodeid + suffix


@pytest.fixture
def shared_data() -> Path:
    """The real captures in ../shared/data; the test skips, saying why, where they are absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data folder {SHARED_DATA} is absent (it lives beside the checkout as ../shared/data)")
    return SHARED_DATA


@pytest.fixture
def gcs_emulator(monkeypatch):
    """A bare gcp-storage-emulator on loopback (no fault proxy: ``fake_gcs`` is that), for reads that a
    process other than the test's own makes, such as a Dask worker or a CLI subprocess; yields a
    storage client to seed it with."""
    from gcp_storage_emulator.server import create_server

    from tpudoctor.testing.loopback import free_port

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    try:
        yield storage.Client(project="test-project", credentials=AnonymousCredentials(),
                             client_options={"api_endpoint": f"http://127.0.0.1:{port}"})  # for seeding
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _no_ambient_cloud(monkeypatch, tmp_path):
    """Tests never see the developer's gcloud config, credentials or project."""
    for var in ("CLOUDSDK_CORE_PROJECT", "CLOUDSDK_COMPUTE_ZONE", "TPU_NAME", "GOOGLE_CLOUD_PROJECT",
                "TPUDOCTOR_FORMAT", "TPUDOCTOR_WORKER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud-config"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-credentials.json"))


@pytest.fixture(scope="module")
def real_report(tmp_path_factory) -> dict:
    """The JSON report of a real capture (JAX, compute-bound, 8 annotated steps): a CI run's report."""
    from tpudoctor.cli import main

    out = tmp_path_factory.mktemp("report") / "report.json"
    capture = Path(__file__).resolve().parent / "fixtures" / "profiles" / "jax_compute_bound"
    assert main(["profile", "analyze", str(capture), "--format", "json", "-o", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(autouse=True)
def _no_ambient_libtpu_logs(monkeypatch, tmp_path):
    """Tests never read this machine's libtpu logs: a JAX or libtpu process run here (a compile for a TPU
    topology, another test) leaves files in /tmp/tpu_logs that ``check`` would otherwise report."""
    monkeypatch.setenv("TPUDOCTOR_DEFAULT_TPU_LOG_DIR", str(tmp_path / "no-default-tpu-logs"))  # subprocesses too
    monkeypatch.setenv("TPU_LOG_DIR", str(tmp_path / "no-tpu-logs"))
