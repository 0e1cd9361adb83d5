"""Loopback clouds for the output snapshots of the commands that reach Google Cloud (tests/reports/test_output_snapshots.py).

A scene starts the fakes a command talks to (the TPU API, the metadata server, Cloud Storage through the
storage emulator, Cloud Logging, Cloud Monitoring, the gcloud stand-in for the pod fan-out), seeds them with
fixed data and points tpudoctor at them through the variables a user would set. ``SCENES[name](tmp_path,
monkeypatch)`` is a context manager yielding a ``Scene``.

What differs from run to run in these outputs is replaced by ``CLOUD_NORMALISE`` (ports of the fakes, the
scene's temporary folder, wall-clock times and durations, the machine's host name, the write probe's random
object name); nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tpudoctor.testing.fake_gcs import FakeGcs
from tpudoctor.testing.fake_host import build_fake_tpu_host
from tpudoctor.testing.fake_logging import FakeLoggingServer
from tpudoctor.testing.fake_metadata import FakeMetadataServer, tpu_vm_metadata
from tpudoctor.testing.fake_monitoring import FakeMonitoringServer
from tpudoctor.testing.fake_tpu_api import FakeTpuApi, make_node
from tpudoctor.testing.loopback import free_port
from tpudoctor.testing.pod_reports import write_worker_reports
from tpudoctor.tfrecord import encode_records

TESTS = Path(__file__).resolve().parent
PROFILE_CAPTURE = TESTS / "fixtures" / "profiles" / "jax_steady" / "localhost.xplane.pb"
PROFILE_RUN = "job/plugins/profile/2024_05_05_05_05_05"
ZONE = "us-central2-b"
SOCKET_CLOSED = "E1130 10:00:02.000000 42 rpc.cc:9] Unavailable: Socket closed"
OOM = ("E1130 10:00:00.500000 42 tpu_runtime.cc:9] RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out "
       "of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm capacity by 5.06G.")
GOODPUT_T0 = dt.datetime(2024, 8, 13, 10, 0, 0, tzinfo=dt.timezone.utc)

# Cleared for every scene: the machine's own cloud must not leak into a snapshot.
CLEARED_ENV = (
    "GOOGLE_APPLICATION_CREDENTIALS", "TPUDOCTOR_TPU_ENDPOINT", "STORAGE_EMULATOR_HOST", "GCE_METADATA_HOST",
    "GCE_METADATA_ROOT", "GCE_METADATA_IP", "CLOUDSDK_CORE_PROJECT", "CLOUDSDK_COMPUTE_ZONE", "TPU_NAME",
    "TPUDOCTOR_WORKER", "TPUDOCTOR_FORMAT", "TPUDOCTOR_LOGGING_ENDPOINT", "TPUDOCTOR_MONITORING_ENDPOINT",
    "TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "TPU_LOG_DIR", "TPU_ACCELERATOR_TYPE", "GOOGLE_CLOUD_PROJECT",
    "TPUDOCTOR_CLUSTER",
)


@dataclasses.dataclass
class Scene:
    root: Path
    """The scene's temporary folder (normalised to <tmp> in the outputs)."""
    gcs: FakeGcs | None = None
    words: dict[str, str] = dataclasses.field(default_factory=dict)
    """Filled into the row's argv (``{since}``): values computed when the scene starts."""

    def gcs_object(self, bucket: str, name: str) -> str:
        """An object the command wrote, as the output of a row whose command writes to gs://."""
        assert self.gcs is not None
        return self.gcs.client().bucket(bucket).blob(name).download_as_bytes().decode("utf-8")


def _machine(root: Path, monkeypatch, *, chips: int = 0) -> None:
    """A machine with no cloud of its own: no credentials, a metadata host that refuses, fake /sys /proc /dev."""
    for var in CLEARED_ENV:
        monkeypatch.delenv(var, raising=False)
    (root / "gcloud").mkdir(parents=True)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(root / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{free_port()}")  # nothing listens: refused at once
    if chips:
        host = build_fake_tpu_host(root / "host", "v4", chips=chips)
    else:
        host = {"TPUDOCTOR_SYSFS_ROOT": str(root / "host" / "sys"), "TPUDOCTOR_PROC_ROOT": str(root / "host" / "proc"),
                "TPUDOCTOR_DEV_ROOT": str(root / "host" / "dev"),
                "TPUDOCTOR_LIBTPU_LOCKFILE": str(root / "host" / "libtpu_lockfile")}
        for key in ("TPUDOCTOR_SYSFS_ROOT", "TPUDOCTOR_PROC_ROOT", "TPUDOCTOR_DEV_ROOT"):
            Path(host[key]).mkdir(parents=True, exist_ok=True)
    for key, value in host.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TPU_LOG_DIR", str(root / "tpu_logs"))


@contextlib.contextmanager
def tpu_vm(root: Path, monkeypatch) -> Iterator[Scene]:
    """tpudoctor on worker 0 of a READY v4-8 node my-tpu: the TPU API, the metadata server, a bucket with
    TFRecord data, one Cloud Logging error entry and Cloud Monitoring duty-cycle points."""
    _machine(root, monkeypatch, chips=4)
    now = dt.datetime.now(dt.timezone.utc)
    with contextlib.ExitStack() as stack:
        api = stack.enter_context(FakeTpuApi())
        metadata = stack.enter_context(FakeMetadataServer(tpu_vm_metadata("p", ZONE, "my-tpu", "v4-8")))
        gcs = stack.enter_context(FakeGcs())
        logging_fake = stack.enter_context(FakeLoggingServer())
        monitoring = stack.enter_context(FakeMonitoringServer())
        api.add_node(make_node("p", ZONE, "my-tpu"))
        gcs.create_bucket("bucket", location="US-CENTRAL2")
        gcs.upload("bucket", "train/part-0.tfrecord", encode_records([b"a" * 100, b"b" * 50]))
        gcs.upload("bucket", "train/part-1.tfrecord", encode_records([b"c" * 10]))
        gcs.create_bucket("pod-reports", location="US-CENTRAL2")
        logging_fake.add_entry(text="E tpu_program.cc:88] Unavailable: Socket closed", project="p", worker_id="0",
                               timestamp=now - dt.timedelta(minutes=5))
        monitoring.add_series("tpu.googleapis.com/accelerator/duty_cycle", [50, 60, 70], project="p", end=now)
        monitoring.add_series("tpu.googleapis.com/accelerator/memory_used", [8e9, 9e9, 9e9], project="p", end=now)
        monitoring.add_series("tpu.googleapis.com/accelerator/memory_total", [32e9] * 3, project="p", end=now)
        for key, value in {"TPUDOCTOR_TPU_ENDPOINT": api.url, "GCE_METADATA_HOST": metadata.host,
                           "STORAGE_EMULATOR_HOST": gcs.url, "TPUDOCTOR_LOGGING_ENDPOINT": logging_fake.endpoint,
                           "TPUDOCTOR_MONITORING_ENDPOINT": monitoring.endpoint}.items():
            monkeypatch.setenv(key, value)
        yield Scene(root, gcs=gcs)


@contextlib.contextmanager
def no_cloud(root: Path, monkeypatch) -> Iterator[Scene]:
    """A laptop: no credentials, no metadata server, the real endpoints (never reached: nothing to call with)."""
    _machine(root, monkeypatch)
    yield Scene(root)


@contextlib.contextmanager
def buckets(root: Path, monkeypatch) -> Iterator[Scene]:
    """Cloud Storage only: a profile logdir, 8 worker reports, a locked bucket that refuses listing."""
    _machine(root, monkeypatch)
    with FakeGcs() as gcs:
        gcs.create_bucket("profiles")
        gcs.upload("profiles", f"{PROFILE_RUN}/localhost.xplane.pb", PROFILE_CAPTURE.read_bytes())
        gcs.create_bucket("pod-reports")
        from sample_reports import preempted_node_report

        base = preempted_node_report().to_dict()
        for path in write_worker_reports(base, root / "reports", 8, problems={5: "GCS-003"}, slice_workers=8):
            gcs.upload("pod-reports", f"run-1/{path.name}", path.read_bytes())
        gcs.upload("pod-reports", "run-1/notes.txt", b"not a report")
        gcs.create_bucket("locked")
        gcs.upload("locked", "run-1/0.json", (root / "reports" / "0.json").read_bytes())
        gcs.upload("locked", f"{PROFILE_RUN}/localhost.xplane.pb", PROFILE_CAPTURE.read_bytes())
        gcs.deny("locked", "storage.objects.list")
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
        monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
        yield Scene(root, gcs=gcs)


@contextlib.contextmanager
def pod_slice(root: Path, monkeypatch) -> Iterator[Scene]:
    """A 2-worker v4-16 node "pod" behind the gcloud stand-in; worker 1 has 3 chips and an OOM in its libtpu log."""
    from pod_slice import build_slice

    _machine(root, monkeypatch)
    with FakeTpuApi() as api:
        api.add_node(make_node("p", ZONE, "pod", accelerator_type="v4-16", workers=2))
        monkeypatch.setenv("TPUDOCTOR_TPU_ENDPOINT", api.url)
        for key, value in build_slice(root / "slice", 2, chips_missing={1: 1},
                                      logs={1: [OOM], 0: [SOCKET_CLOSED]}).items():
            monkeypatch.setenv(key, value)
        yield Scene(root)


@contextlib.contextmanager
def job_logs(root: Path, monkeypatch) -> Iterator[Scene]:
    """A MaxText job's entries in Cloud Logging (worker 0; fixed times in 2024): for ``goodput --tpu``."""
    _machine(root, monkeypatch)
    with FakeLoggingServer(page_size=7) as fake:
        def add(t: float, text: str) -> None:
            fake.add_entry(text=text, severity="INFO", timestamp=GOODPUT_T0 + dt.timedelta(seconds=t),
                           worker_id="0", node_id="big-tpu", project="my-project")

        add(0, "System Information: Jax Version: 0.4.31")
        add(60, "System Information: Jax Backend: PJRT C API")
        add(180, "completed step: 0, seconds: 120.000, TFLOP/s/device: 1.0, Tokens/s/device: 1.0, loss: 10.0")
        for n in range(1, 6):
            add(180 + 10 * n, f"completed step: {n}, seconds: 10.000, TFLOP/s/device: 1.0, Tokens/s/device: 1.0, "
                              "loss: 9.0")
        add(240, "Training finished")
        monkeypatch.setenv("TPUDOCTOR_LOGGING_ENDPOINT", fake.endpoint)
        since = int((dt.datetime.now(dt.timezone.utc) - GOODPUT_T0).total_seconds()) + 3600
        yield Scene(root, words={"since": f"{since}s"})


@contextlib.contextmanager
def workbench(root: Path, monkeypatch) -> Iterator[Scene]:
    """A laptop with files only (no cloud: every cloud check skips): 8 worker reports to merge (worker 5 with a
    GCS finding) and two goodput reports to compare, the second from the same MaxText job cut before its restart."""
    from sample_reports import preempted_node_report

    from tpudoctor.cli import main

    _machine(root, monkeypatch)
    write_worker_reports(preempted_node_report().to_dict(), root / "reports", 8, problems={5: "GCS-003"},
                         slice_workers=8)
    (root / "goodput").mkdir()
    log = (TESTS / "fixtures" / "goodput" / "maxtext_restart.log").read_text().splitlines(keepends=True)
    (root / "goodput" / "maxtext_restart.log").write_text("".join(log))
    (root / "goodput" / "before_restart.log").write_text("".join(log[:24]))
    for name, path in (("a", root / "goodput" / "maxtext_restart.log"),
                       ("b", root / "goodput" / "before_restart.log")):
        with contextlib.redirect_stdout(None):
            assert main(["goodput", str(path), "--format", "json", "-o", str(root / "goodput" / f"{name}.json")]) == 0
    yield Scene(root, words={"root": str(root)})


def scene_root(stack: contextlib.ExitStack) -> Path:
    """A new folder whose path has the same length on every run and machine (/tmp/tpd-snap-XXXXXXXX): the text
    report cuts long evidence at a fixed width, so a longer temporary path would move the cut."""
    root = Path(tempfile.mkdtemp(prefix="tpd-snap-", dir="/tmp" if Path("/tmp").is_dir() else None))
    stack.callback(shutil.rmtree, root, ignore_errors=True)
    return root / "s"


SCENES: dict[str, Callable[..., contextlib.AbstractContextManager[Scene]]] = {
    "tpu_vm": tpu_vm, "no_cloud": no_cloud, "buckets": buckets, "pod_slice": pod_slice, "job_logs": job_logs,
    "workbench": workbench,
}


def cloud_normalise(text: str, scene: Scene) -> str:
    """Only what differs between two runs of the same row: see the module docstring."""
    text = text.replace(str(scene.root), "<tmp>")
    # the same folder as markdown escapes it (mkdtemp's random part may hold an underscore)
    text = re.sub(r"/tmp/tpd-snap-(?:\\?[A-Za-z0-9_-]){8}/s", "<tmp>", text)
    for pattern, replacement in CLOUD_NORMALISE:
        text = pattern.sub(replacement, text)
    host = socket.gethostname()
    for form in (f'"host": "{host}"', f"host {host}", f"<td>{host}</td>", f'hostname="{host}"',
                 f"**host** {host}", f"| {host} |", f"host: {host}",
                 f"<code>{host}</code>", f"on `{host}`"):
        text = text.replace(form, form.replace(host, "<host>"))
    return text


_ISO_TIME = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"
CLOUD_NORMALISE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(127\.0\.0\.1|<ip-\d+>):\d+"), r"\1:<port>"),  # the fakes' ports (an IP redacted or not)
    (re.compile(_ISO_TIME), "<time>"),  # started_at, log entry times (relative to now), the log filter's start
    (re.compile(r'("(?:duration_s|elapsed_s|seconds_since_sent)": )[0-9.e+-]+'), r"\1<s>"),  # JSON durations
    (re.compile(r'(time=")[0-9.]+(")'), r"\1<s>\2"),  # JUnit durations
    (re.compile(r"\.tpudoctor-probe-[0-9a-f]{32}"), ".tpudoctor-probe-<uuid>"),  # the write probe's object
)
