"""Every command's output, byte for byte, against stored snapshots (tests/snapshots/<command>/).

A refactoring must not change a byte of what users see: each row of ``SNAPSHOTS`` runs the CLI in
this process (``tpudoctor.cli.main``, stdout captured) and compares its output with the stored
file, after ``NORMALISE`` has replaced only what differs from run to run. After a deliberate change
of the output, regenerate the snapshots and review their diff:

    TPUDOCTOR_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/reports/test_output_snapshots.py -q

To cover another command, add rows to ``SNAPSHOTS`` (a name, the argv, and where it runs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from paths import REPO as REPO_ROOT
from paths import TESTS
from shared_data import SHARED_DATA

from tpudoctor.cli import main
from tpudoctor.formats import BENCH_FORMATS, DIAG_FORMATS

SNAPSHOTS_DIR = TESTS / "snapshots"
PROFILE_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "profiles"
UPDATE = bool(os.environ.get("TPUDOCTOR_UPDATE_SNAPSHOTS"))

FORMAT_SUFFIX = {"text": "txt", "json": "json", "markdown": "md", "html": "html", "junit": "xml"}

# (pattern, replacement) applied to every output before comparing: only what legitimately differs
# between two runs of the same command on the same input, each found by running it twice.
NORMALISE: tuple[tuple[re.Pattern[str], str], ...] = (
    # the JSON report's wall time of the load and analysis (top level, two-space indent)
    (re.compile(r'^  "duration_s": [0-9.e+-]+,$', re.MULTILINE), '  "duration_s": <normalised>,'),
    # conftest points libtpu's default log folder at an empty one of the test's (this machine's own libtpu logs
    # stay out); the report names the default as a user sees it
    (re.compile(r'/[^\s,;"<>]*/no-default-tpu-logs'), "/tmp/tpu_logs"),
    # memory's headline and JUnit suite give the run's wall time
    (re.compile(r'(tpudoctor memory: [^\n<]*? passed, )[0-9.]+ s\)'), r"\1<normalised> s)"),
    (re.compile(r'(<testsuite name="tpudoctor memory" [^>]*time=")[0-9.]+"'), r'\1<normalised>"'),
    # the frameworks installed where the suite runs (which of them, and their versions, are the machine's)
    (re.compile(r'"packages": \{[^{}]*\}'), '"packages": <normalised>'),
)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One CLI run: ``argv`` (run in ``cwd``, so paths in the output are the relative ones given)
    and the stored output ``SNAPSHOTS_DIR/<name>``. A missing ``cwd`` skips the row."""

    name: str
    argv: tuple[str, ...]
    cwd: Path = REPO_ROOT
    exit_code: int = 0
    scene: str | None = None
    """A loopback cloud to run in (tests/snapshot_scenes.py); its outputs get ``cloud_normalise`` too."""
    stream: str = "stdout"
    """What is compared: stdout, stderr (an error message), or ``gs://BUCKET/OBJECT`` (what the command wrote)."""
    document: str | None = None
    """A saved report document (relative to ``cwd``) rendered in ``argv[0]``'s format instead of a CLI run: for
    commands that run a framework (diag, bench), whose output is rendered from a fixed document here."""

    @property
    def path(self) -> Path:
        return SNAPSHOTS_DIR / self.name


# ---- tpudoctor profile analyze -----------------------------------------------------------------

PROFILE_FORMATS = ("text", "json", "markdown", "html")  # the formats `profile analyze` offers


def _profile_captures() -> list[tuple[str, str, Path]]:
    """(snapshot stem, capture path relative to its folder, folder) of every fixture and real capture."""
    fixtures = sorted(p.name for p in PROFILE_FIXTURES.iterdir() if p.is_dir())
    captures = [(name, f"tests/fixtures/profiles/{name}", REPO_ROOT) for name in fixtures]
    real = ["xprof_tpu_inference_2.xplane.pb", "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb",
            "tracelens_jax_gpu/tests_test_data_jax_te_fused_attn_categorization_934987a2fc2f.xplane.pb",
            "tracelens_jax_gpu/tests_traces_mi300_jax_conv_minimal_08_tw003.xplane.pb",
            "tracelens_jax_gpu/tests_traces_mi300_jax_conv_minimal_legacy_chi-mi300x-013.ord.vultr.cpe.ice.amd.com"
            ".xplane.pb"]
    captures += [("shared_" + Path(rel).name.removesuffix(".xplane.pb"), rel, SHARED_DATA) for rel in real]
    return captures


# Redacted reports of captures whose host names are IPs or machine names
REDACTED = ("multihost_slow_host", "shared_xprof_gpu_multi_worker_34.83.195.179_6003")


def _profile_exit_code(stem: str) -> int:
    """1 when the stored report has a FAIL or ERROR finding (the one exit rule of every report), else 0."""
    stored = SNAPSHOTS_DIR / "profile" / f"{stem}.json"
    if not stored.is_file():
        return 0
    findings = json.loads(stored.read_text(encoding="utf-8").replace("<normalised>", "0"))["findings"]
    return int(any(f["status"] in ("FAIL", "ERROR") for f in findings))


def _profile_snapshots() -> list[Snapshot]:
    rows = []
    for stem, capture, cwd in _profile_captures():
        code = _profile_exit_code(stem)
        for fmt in PROFILE_FORMATS:
            argv = ("profile", "analyze", capture, "--format", fmt)
            rows.append(Snapshot(f"profile/{stem}.{FORMAT_SUFFIX[fmt]}", argv, cwd, exit_code=code))
            if stem in REDACTED:
                rows.append(Snapshot(f"profile/{stem}.redacted.{FORMAT_SUFFIX[fmt]}", (*argv, "--redact"), cwd,
                                     exit_code=code))
    return rows


SNAPSHOTS: list[Snapshot] = [*_profile_snapshots()]


# ---- commands that reach Google Cloud (tests/snapshot_scenes.py: loopback fakes) --------------

CHECK_FORMATS = ("text", "json", "markdown", "html", "junit")
CHECK_ON_VM = ("check", "--step", "1", "--step", "2", "--step", "4", "--data", "gs://bucket/train",
               "--checkpoint-dir", "gs://bucket/ckpt")
FANOUT = ("check", "--tpu", "pod", "--zone", "us-central2-b", "--project", "p", "--all-workers", "--step", "1",
          "--step", "4", "--worker-timeout", "120s")


def _cloud_snapshots() -> list[Snapshot]:
    rows = [Snapshot(f"cloud/check_on_vm.{FORMAT_SUFFIX[f]}", (*CHECK_ON_VM, "--format", f), exit_code=1,
                     scene="tpu_vm") for f in CHECK_FORMATS]
    rows += [
        Snapshot("cloud/check_on_vm.redacted.json", (*CHECK_ON_VM, "--format", "json", "--redact"), exit_code=1,
                 scene="tpu_vm"),
        Snapshot("cloud/check_write_probe.txt", ("check", "--step", "2", "--data", "gs://bucket/train",
                                                 "--checkpoint-dir", "gs://bucket/ckpt", "--write-probe", "-v"),
                 scene="tpu_vm"),
        Snapshot("cloud/check_to_gcs.json", ("check", "NODE-004", "NODE-005", "--worker", "3", "--format", "json",
                                             "-o", "gs://pod-reports/run/{worker}.json"),
                 scene="tpu_vm", stream="gs://pod-reports/run/3.json"),
        Snapshot("cloud/check_no_credentials.txt", ("check", "--step", "1", "--step", "2", "--tpu", "my-tpu",
                                                    "--zone", "us-central2-b", "--project", "p", "--data",
                                                    "gs://bucket/train", "-v"), exit_code=1, scene="no_cloud"),
        Snapshot("cloud/check_no_credentials.json", ("check", "--step", "1", "--step", "2", "--tpu", "my-tpu",
                                                     "--zone", "us-central2-b", "--project", "p", "--data",
                                                     "gs://bucket/train", "--format", "json"),
                 exit_code=1, scene="no_cloud"),
        Snapshot("cloud/merge_gcs.txt", ("merge", "gs://pod-reports/run-1/"), exit_code=1, scene="buckets"),
        Snapshot("cloud/merge_gcs.json", ("merge", "gs://pod-reports/run-1/", "--format", "json"), exit_code=1,
                 scene="buckets"),
        Snapshot("cloud/merge_gcs_denied.err", ("merge", "gs://locked/run-1/"), exit_code=2, scene="buckets",
                 stream="stderr"),
        Snapshot("cloud/profile_gcs.txt", ("profile", "analyze", "gs://profiles/job"), scene="buckets"),
        Snapshot("cloud/profile_gcs.json", ("profile", "analyze", "gs://profiles/job", "--format", "json"),
                 scene="buckets"),
        Snapshot("cloud/profile_gcs.redacted.txt", ("profile", "analyze", "gs://profiles/job", "--redact"),
                 scene="buckets"),
        Snapshot("cloud/profile_gcs.redacted.md", ("profile", "analyze", "gs://profiles/job", "--redact", "--format",
                                                   "markdown"), scene="buckets"),
        Snapshot("cloud/profile_gcs_denied.err", ("profile", "analyze", "gs://locked/job"), exit_code=2,
                 scene="buckets", stream="stderr"),
        Snapshot("cloud/profile_gcs_missing.err", ("profile", "analyze", "gs://no-such-bucket/job"), exit_code=2,
                 scene="buckets", stream="stderr"),
        Snapshot("cloud/profile_capture_unknown_tpu.err", ("profile", "capture", "--tpu", "missing", "--project", "p",
                                                           "--zone", "us-central2-b", "--logdir", "gs://profiles/x"),
                 exit_code=2, scene="pod_slice", stream="stderr"),
        Snapshot("cloud/fanout_unknown_tpu.err", ("check", "--tpu", "missing", "--zone", "us-central2-b",
                                                  "--project", "p", "--all-workers"),
                 exit_code=2, scene="pod_slice", stream="stderr"),
        Snapshot("cloud/fanout.txt", FANOUT, exit_code=1, scene="pod_slice"),
        Snapshot("cloud/fanout.json", (*FANOUT, "--format", "json"), exit_code=1, scene="pod_slice"),
        Snapshot("cloud/goodput_cloud.json", ("goodput", "--tpu", "big-tpu", "--project", "my-project", "--since",
                                              "{since}", "--format", "json"), scene="job_logs"),
        Snapshot("cloud/goodput_cloud.txt", ("goodput", "--tpu", "big-tpu", "--project", "my-project", "--since",
                                             "{since}"), scene="job_logs"),
    ]
    rows += [Snapshot(f"cloud/goodput_cloud.redacted.{FORMAT_SUFFIX[f]}",
                      ("goodput", "--tpu", "big-tpu", "--project", "my-project", "--since", "{since}", "--format", f,
                       "--redact"), scene="job_logs") for f in ("text", "json", "markdown", "html")]
    return rows


SNAPSHOTS += _cloud_snapshots()


# ---- commands on files only: check on logs, merge, compare, hang --replay, goodput ----------------

LOGS = ("tests/data/logs/multi_warn_then_oom_then_followon.log", "tests/data/logs/multi_socket_closed_preempted.log")
HANG_CAPTURES = ("device_step", "healthy", "data_loader", "checkpoint", "metrics_lock")
COMPARED = ("tests/fixtures/profiles/jax_steady", "tests/fixtures/profiles/jax_input_bound")


def _file_snapshots() -> list[Snapshot]:
    check_logs = ("check", "--step", "4", *(a for log in LOGS for a in ("--log-file", log)))
    rows = [Snapshot(f"files/check_logs.{FORMAT_SUFFIX[f]}", (*check_logs, "--format", f), exit_code=1,
                     scene="workbench") for f in CHECK_FORMATS]
    rows.append(Snapshot("files/check_logs.redacted.json", (*check_logs, "--format", "json", "--redact"),
                         exit_code=1, scene="workbench"))
    rows += [Snapshot(f"files/merge.{FORMAT_SUFFIX[f]}", ("merge", "{root}/reports", "--format", f), exit_code=1,
                      scene="workbench") for f in CHECK_FORMATS]
    rows += [Snapshot(f"files/compare_profiles.{FORMAT_SUFFIX[f]}", ("compare", *COMPARED, "--format", f),
                      scene="workbench") for f in CHECK_FORMATS]
    rows += [Snapshot(f"files/compare_profiles.redacted.{FORMAT_SUFFIX[f]}",
                      ("compare", *COMPARED, "--format", f, "--redact"), scene="workbench") for f in ("text", "json")]
    rows.append(Snapshot("files/compare_profiles_gate.txt", ("compare", *COMPARED, "--fail-on-regression", "5%"),
                         exit_code=1, scene="workbench"))
    rows += [Snapshot(f"files/compare_goodput.{FORMAT_SUFFIX[f]}",
                      ("compare", "{root}/goodput/a.json", "{root}/goodput/b.json", "--format", f),
                      scene="workbench") for f in CHECK_FORMATS]
    rows += [Snapshot(f"files/hang_{capture}.{FORMAT_SUFFIX[f]}",
                      ("hang", "--replay", f"tests/data/hang/{capture}", "--format", f),
                      exit_code=0 if capture == "healthy" else 1, scene="workbench")
             for capture in HANG_CAPTURES for f in (CHECK_FORMATS if capture == "device_step" else ("text",))]
    rows += [Snapshot(f"files/goodput_maxtext.{FORMAT_SUFFIX[f]}",
                      ("goodput", "tests/fixtures/goodput/maxtext_restart.log", "--format", f), scene="workbench")
             for f in CHECK_FORMATS]
    # --min-ettr 0.5 above the log's ETTR (0.271): its testcase fails first, whatever --fail-on says (exit 1)
    rows.append(Snapshot("files/goodput_maxtext_min_ettr.xml", ("goodput", "tests/fixtures/goodput/maxtext_restart.log",
                                                                "--format", "junit", "--min-ettr", "0.5"),
                         exit_code=1, scene="workbench"))
    rows += [Snapshot(f"files/compare_goodput.redacted.{FORMAT_SUFFIX[f]}",
                      ("compare", "{root}/goodput/a.json", "{root}/goodput/b.json", "--format", f, "--redact"),
                      scene="workbench") for f in ("text", "json")]
    rows += [Snapshot(f"files/goodput_maxtext.redacted.{FORMAT_SUFFIX[f]}",
                      ("goodput", "tests/fixtures/goodput/maxtext_restart.log", "--format", f, "--redact"),
                      scene="workbench") for f in ("text", "json", "markdown", "html")]
    return rows


SNAPSHOTS += _file_snapshots()


# ---- memory on OOM logs and a capture; diag and bench from saved documents (they run JAX / TensorFlow) -----

MEMORY_FORMATS = ("text", "json", "markdown", "html", "junit")
MEMORY_LOGS = ("tests/data/memory/easydel_166_compile_hbm_report.log",
               "tests/data/memory/trax_431_runtime_allocate_fragmentation.log")
DOCUMENTS = REPO_ROOT / "tests" / "data" / "documents"


def _product_snapshots() -> list[Snapshot]:
    rows = [Snapshot(f"files/memory_oom_logs.{FORMAT_SUFFIX[f]}", ("memory", *MEMORY_LOGS, "--format", f),
                     exit_code=1) for f in MEMORY_FORMATS]
    rows += [Snapshot(f"files/memory_capture.{FORMAT_SUFFIX[f]}",
                      ("memory", "xprof_tpu_inference_2.xplane.pb", "--format", f), SHARED_DATA)
             for f in MEMORY_FORMATS]
    # diag -r 2 on 4 CPU devices with a flipped bit on device 2 and device 1 made 50 % slower (3 FAIL, 10 PASS)
    rows += [Snapshot(f"documents/diag_r2_cpu_injected.{FORMAT_SUFFIX[f]}", (f,),
                      document="tests/data/documents/diag_r2_cpu_injected.json") for f in DIAG_FORMATS]
    # the preflight of examples/preflight/programs.py:mlp_adam on v5e:2x2 (libtpu), 7 fixes compiled, 1 verified
    rows += [Snapshot(f"documents/memory_preflight_mlp_adam_v5e.{FORMAT_SUFFIX[f]}", (f,),
                      document="tests/data/documents/memory_preflight_mlp_adam_v5e.json") for f in MEMORY_FORMATS]
    # ByteDance's op trace with a slow last stage, replayed as a dependency graph (the what-if of its stragglers)
    rows += [Snapshot(f"files/pipeline_whatif_st.{FORMAT_SUFFIX[f]}",
                      ("profile", "analyze", "bytedance_straggler/trace-ST.parquet", "--format", f), SHARED_DATA)
             for f in PROFILE_FORMATS]
    # bench of the dense model on CPU against a baseline of the same model, tolerance 1 %
    rows += [Snapshot(f"documents/bench_dense_cpu_vs_baseline.{FORMAT_SUFFIX[f]}", (f,),
                      document="tests/data/documents/bench_dense_cpu_vs_baseline.json") for f in BENCH_FORMATS]
    return rows


SNAPSHOTS += _product_snapshots()


# ---- the comparison ----------------------------------------------------------------------------

def normalise(text: str) -> str:
    for pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text


@pytest.fixture(scope="module")
def _profile_reports() -> dict:
    return {}


@pytest.fixture
def analyse_each_capture_once(monkeypatch, _profile_reports):
    """``profile analyze`` in several formats analyses a capture once in this module: the command's
    analysis step is memoised by its arguments (the rendering, the part under test, runs every time)."""
    from tpudoctor.profile import product as profile_product

    build_report = profile_product.build_report

    def memoised(path, *, run=None, on_progress=None, cluster=None, disabled_plugins=()):
        key = (os.getcwd(), path, run, cluster, tuple(disabled_plugins))
        if key not in _profile_reports:
            _profile_reports[key] = build_report(path, run=run, on_progress=on_progress, cluster=cluster,
                                                 disabled_plugins=disabled_plugins)
        return _profile_reports[key]

    monkeypatch.setattr(profile_product, "build_report", memoised)


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[s.name for s in SNAPSHOTS])
def test_output_matches_snapshot(snapshot: Snapshot, monkeypatch, capsys, analyse_each_capture_once):
    if not snapshot.cwd.is_dir():
        pytest.skip(f"{snapshot.cwd} is absent (reference data lives beside the checkout as ../shared/data, "
                    "or set TPUDOCTOR_SHARED_DATA)")
    monkeypatch.chdir(snapshot.cwd)
    monkeypatch.delenv("TPUDOCTOR_CLUSTER", raising=False)
    with contextlib.ExitStack() as stack:
        scene = None
        if snapshot.scene is not None:
            from snapshot_scenes import SCENES, scene_root

            scene = stack.enter_context(SCENES[snapshot.scene](scene_root(stack), monkeypatch))
        if snapshot.document is not None:
            from tpudoctor.rendering import render

            document = json.loads((snapshot.cwd / snapshot.document).read_text(encoding="utf-8"))
            assert render(document, "json") == (snapshot.cwd / snapshot.document).read_text(encoding="utf-8")
            out = render(document, snapshot.argv[0])
            return _compare(snapshot, out)
        argv = [arg.format(**scene.words) if scene and "{" in arg and scene.words else arg for arg in snapshot.argv]
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == snapshot.exit_code, err
        if snapshot.stream == "stderr":
            out = err
        elif snapshot.stream.startswith("gs://"):
            out = scene.gcs_object(*snapshot.stream.removeprefix("gs://").split("/", 1))
    if scene is not None:
        from snapshot_scenes import cloud_normalise

        out = cloud_normalise(out, scene)
    _compare(snapshot, out)


def _compare(snapshot: Snapshot, out: str) -> None:
    got = normalise(out).encode("utf-8")
    if UPDATE:
        snapshot.path.parent.mkdir(parents=True, exist_ok=True)
        snapshot.path.write_bytes(got)
    assert snapshot.path.is_file(), f"no snapshot {snapshot.path}; create it with TPUDOCTOR_UPDATE_SNAPSHOTS=1"
    expected = snapshot.path.read_bytes()
    if got != expected:
        import difflib

        diff = "".join(difflib.unified_diff(expected.decode("utf-8", "replace").splitlines(True),
                                            got.decode("utf-8", "replace").splitlines(True),
                                            "snapshot", "now", n=1))
        pytest.fail(f"`tpudoctor {' '.join(snapshot.argv)}` differs from {snapshot.path.relative_to(REPO_ROOT)} "
                    f"(after a deliberate change: TPUDOCTOR_UPDATE_SNAPSHOTS=1):\n{diff[:6000]}")


def test_every_stored_snapshot_has_a_row():
    """A snapshot left behind by a removed row or fixture is stale: delete it."""
    rows = {s.path for s in SNAPSHOTS}
    stale = sorted(str(p.relative_to(SNAPSHOTS_DIR)) for p in SNAPSHOTS_DIR.rglob("*") if p.is_file() and p not in rows)
    assert not stale, f"snapshots without a row in SNAPSHOTS: {stale}"
