"""Every command's output, byte for byte, against stored snapshots (tests/snapshots/<command>/).

A refactoring must not change a byte of what users see: each row of ``SNAPSHOTS`` runs the CLI in
this process (``tpudoctor.cli.main``, stdout captured) and compares its output with the stored
file, after ``NORMALISE`` has replaced only what differs from run to run. After a deliberate change
of the output, regenerate the snapshots and review their diff:

    TPUDOCTOR_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_output_snapshots.py -q

To cover another command, add rows to ``SNAPSHOTS`` (a name, the argv, and where it runs).
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from shared_data import SHARED_DATA

from tpudoctor.cli import main

REPO_ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS_DIR = Path(__file__).resolve().parent / "snapshots"
PROFILE_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "profiles"
UPDATE = bool(os.environ.get("TPUDOCTOR_UPDATE_SNAPSHOTS"))

FORMAT_SUFFIX = {"text": "txt", "json": "json", "markdown": "md", "html": "html", "junit": "xml"}

# (pattern, replacement) applied to every output before comparing: only what legitimately differs
# between two runs of the same command on the same input, each found by running it twice.
NORMALISE: tuple[tuple[re.Pattern[str], str], ...] = (
    # the JSON report's wall time of the load and analysis (top level, two-space indent)
    (re.compile(r'^  "duration_s": [0-9.e+-]+,$', re.MULTILINE), '  "duration_s": <normalised>,'),
)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One CLI run: ``argv`` (run in ``cwd``, so paths in the output are the relative ones given)
    and the stored output ``SNAPSHOTS_DIR/<name>``. A missing ``cwd`` skips the row."""

    name: str
    argv: tuple[str, ...]
    cwd: Path = REPO_ROOT
    exit_code: int = 0

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


def _profile_snapshots() -> list[Snapshot]:
    rows = []
    for stem, capture, cwd in _profile_captures():
        for fmt in PROFILE_FORMATS:
            argv = ("profile", "analyze", capture, "--format", fmt)
            rows.append(Snapshot(f"profile/{stem}.{FORMAT_SUFFIX[fmt]}", argv, cwd))
            if stem in REDACTED:
                rows.append(Snapshot(f"profile/{stem}.redacted.{FORMAT_SUFFIX[fmt]}", (*argv, "--redact"), cwd))
    return rows


SNAPSHOTS: list[Snapshot] = [*_profile_snapshots()]


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
    from tpudoctor.commands import profile_cmd

    build_report = profile_cmd.build_report

    def memoised(path, *, run=None, on_progress=None, cluster=None):
        key = (os.getcwd(), path, run, cluster)
        if key not in _profile_reports:
            _profile_reports[key] = build_report(path, run=run, on_progress=on_progress, cluster=cluster)
        return _profile_reports[key]

    monkeypatch.setattr(profile_cmd, "build_report", memoised)


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[s.name for s in SNAPSHOTS])
def test_output_matches_snapshot(snapshot: Snapshot, monkeypatch, capsys, analyse_each_capture_once):
    if not snapshot.cwd.is_dir():
        pytest.skip(f"{snapshot.cwd} is absent (reference data lives beside the checkout as ../shared/data, "
                    "or set TPUDOCTOR_SHARED_DATA)")
    monkeypatch.chdir(snapshot.cwd)
    monkeypatch.delenv("TPUDOCTOR_CLUSTER", raising=False)
    capsys.readouterr()
    code = main(list(snapshot.argv))
    out, err = capsys.readouterr()
    assert code == snapshot.exit_code, err
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
