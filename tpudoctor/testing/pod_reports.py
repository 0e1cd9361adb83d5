"""Per-worker check reports for merge tests and the merge benchmark: one real report, re-addressed per worker.

>>> write_worker_reports(base_document, folder, 64, problems={3: "NODE-004"})

``base_document`` is a check report a real ``tpudoctor check --format json`` wrote; each copy gets its worker
number (target and environment) and, for the workers in ``problems``, that check turned into a FAIL.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any


def worker_document(base: dict[str, Any], worker: int, *, failing: str | None = None,
                    slice_workers: int | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    doc["target"]["worker"] = str(worker)
    doc["host"] = f"t1v-n-0a1b2c3d-w-{worker}"
    env = doc.setdefault("environment", {})
    env["worker"] = str(worker)
    if slice_workers:
        env["slice_workers"] = slice_workers
    for result in doc["results"]:
        if result["id"] == failing:
            result.update(status="FAIL", message=f"{result['message']} (broken on worker {worker})",
                          severity="high", skip_reason=None)
    doc["summary"]["root_cause"] = failing
    return doc


def write_worker_reports(base: dict[str, Any], folder: Path, count: int, *, problems: dict[int, str] | None = None,
                         slice_workers: int | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"{i}.json"
        path.write_text(json.dumps(worker_document(base, i, failing=(problems or {}).get(i),
                                                   slice_workers=slice_workers)))
        paths.append(path)
    return paths
