"""A pod slice without a pod: one fake TPU VM host per worker and the ``gcloud`` stand-in on PATH.

Every worker really runs ``tpudoctor check`` in its own process, with its own /sys, /proc and /dev
(``tpudoctor.testing.fake_host``), its own libtpu log folder and its own installed package versions (a
site folder of dist-info records on PYTHONPATH, which is what ``importlib.metadata`` reads).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tpudoctor.testing.fake_host import build_fake_tpu_host
from tpudoctor.testing.loopback import free_port

STAND_IN_BIN = Path(__file__).resolve().parent / "pod_slice_bin"
TPUDOCTOR_BIN = str(Path(sys.executable).parent)
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
VERSIONS = {"jax": "0.4.35", "jaxlib": "0.4.35", "libtpu": "0.0.5"}


def _site(folder: Path, versions: dict[str, str]) -> Path:
    for name, version in versions.items():
        info = folder / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def build_slice(root: Path, workers: int, *, tpu: str = "pod", zone: str = "us-central2-b", gen: str = "v4",
                chips_missing: dict[int, int] | None = None, versions: dict[int, dict[str, str]] | None = None,
                logs: dict[int, list[str]] | None = None, slow: dict[int, float] | None = None,
                hung: set[int] = frozenset(), no_tpudoctor: set[int] = frozenset(),
                unreachable: set[int] = frozenset(),
                banner: dict[int, str] | None = None, replay_from: int | None = None) -> dict[str, str]:
    """Write the slice; return the environment for the machine that fans out (PATH has the stand-in).

    ``replay_from``: that worker runs for real and records its answer; every other plain worker (not hung, slow,
    unreachable or bannered) answers the same command with that record, as identical workers would.
    """
    chips_missing, versions, logs = chips_missing or {}, versions or {}, logs or {}
    slow, banner = slow or {}, banner or {}
    spec = {"tpu": tpu, "zone": zone, "workers": {}, "pid_log": str(root / "hung-pids.txt"),
            "call_log": str(root / "gcloud-calls.jsonl")}
    for i in range(workers):
        home = root / f"worker-{i}"
        env = build_fake_tpu_host(home / "host", gen, chips=4 - chips_missing.get(i, 0))
        log_dir = home / "tpu_logs"
        log_dir.mkdir(parents=True)
        if i in logs:
            (log_dir / "tpu_driver.t1v-n-w.root.log.INFO.20261130-100000.1").write_text("\n".join(logs[i]) + "\n")
        site = _site(home / "site", {**VERSIONS, **versions.get(i, {})})
        env.update({"TPU_LOG_DIR": str(log_dir), "PYTHONPATH": str(site), "HOME": str(home),
                    "GCE_METADATA_HOST": f"127.0.0.1:{free_port()}"})
        spec["workers"][str(i)] = {
            "env": env, "cwd": str(home), "delay_s": slow.get(i, 0), "hung": i in hung,
            "unreachable": i in unreachable,
            "banner": banner.get(i, ""),
            "path": BASE_PATH if i in no_tpudoctor else f"{TPUDOCTOR_BIN}:{BASE_PATH}",
        }
        if replay_from is not None:
            record = str(root / f"worker-{replay_from}-answer.json")
            plain = not (i in hung or i in unreachable or i in slow or i in banner or i in no_tpudoctor
                         or i in logs or i in versions or i in chips_missing)
            if i == replay_from:
                spec["workers"][str(i)]["record"] = record
            elif plain:
                spec["workers"][str(i)]["replay"] = record
    spec_path = root / "slice.json"
    spec_path.write_text(json.dumps(spec))
    return {"PATH": f"{STAND_IN_BIN}:{os.environ['PATH']}", "TPUDOCTOR_TEST_SLICE": str(spec_path)}
