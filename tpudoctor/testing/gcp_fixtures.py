"""pytest fixtures for the loopback Google Cloud fakes, for tpudoctor's tests and plugin authors.

Import the ones you use into a test module (or a conftest)::

    from tpudoctor.testing.gcp_fixtures import fake_gcs, fake_tpu_api, gcp_env  # noqa: F401

``gcp_env`` isolates a test from the machine: no Application Default Credentials, a metadata
host that refuses connections, an empty fake /sys and /proc. The fakes point tpudoctor at
themselves through the same environment variables a user would set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tpudoctor.testing.fake_gcs import FakeGcs
from tpudoctor.testing.fake_metadata import FakeMetadataServer, tpu_vm_metadata
from tpudoctor.testing.fake_tpu_api import FakeTpuApi
from tpudoctor.testing.loopback import free_port

CLEARED_ENV = (
    "GOOGLE_APPLICATION_CREDENTIALS", "TPUDOCTOR_TPU_ENDPOINT", "STORAGE_EMULATOR_HOST", "GCE_METADATA_HOST",
    "GCE_METADATA_ROOT", "GCE_METADATA_IP", "CLOUDSDK_CORE_PROJECT", "CLOUDSDK_COMPUTE_ZONE", "TPU_NAME",
    "TPUDOCTOR_WORKER", "TPUDOCTOR_FORMAT",
)


@pytest.fixture
def gcp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no cloud: returns the folder holding the empty fake roots."""
    for var in CLEARED_ENV:
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "machine"
    for sub in ("sys", "proc", "dev", "gcloud"):
        (root / sub).mkdir(parents=True)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(root / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{free_port()}")  # nothing listens: refused at once
    monkeypatch.setenv("TPUDOCTOR_SYSFS_ROOT", str(root / "sys"))
    monkeypatch.setenv("TPUDOCTOR_PROC_ROOT", str(root / "proc"))
    monkeypatch.setenv("TPUDOCTOR_DEV_ROOT", str(root / "dev"))
    monkeypatch.setenv("TPUDOCTOR_LIBTPU_LOCKFILE", str(root / "libtpu_lockfile"))
    monkeypatch.chdir(tmp_path)  # no stray tpudoctor.toml
    return root


@pytest.fixture
def fake_tpu_api(gcp_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTpuApi]:
    with FakeTpuApi() as api:
        monkeypatch.setenv("TPUDOCTOR_TPU_ENDPOINT", api.url)
        yield api


@pytest.fixture
def fake_gcs(gcp_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGcs]:
    with FakeGcs() as gcs:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
        yield gcs


@pytest.fixture
def fake_metadata(gcp_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMetadataServer]:
    """A v4-8 TPU VM named my-tpu in project p, zone us-central2-b; edit ``.tree`` to change it."""
    with FakeMetadataServer(tpu_vm_metadata("p", "us-central2-b", "my-tpu", "v4-8")) as server:
        monkeypatch.setenv("GCE_METADATA_HOST", server.host)
        yield server
