"""Score ``tpudoctor memory`` and ``tpudoctor check --step 4`` on the frozen set of out-of-memory texts
(tests/data/oom/frozen_set_1: verbatim texts from public threads, labelled in labels.toml), case by case.

    .venv/bin/python benchmarks/oom_frozen_set.py [--json]

Per case and command: read as an OOM or not (as labelled), each figure the text states found within 1 % (used,
capacity, exceeded, requested, free, required), each listed allocation's size (1 %), shape and op name found, and
where the thread settled a fix its buffers support, whether that fix is ranked first. A case is right when all of
those hold. Runs each command as a user would (a process per text, JSON output)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "tests" / "data" / "oom" / "frozen_set_1"
TOOL = [sys.executable, "-m", "tpudoctor"]
TOLERANCE = 0.01
FIGURES = ("used", "capacity", "exceeded", "requested", "free", "required")
# where each stated figure may appear in a command's evidence: any key ending so (hbm_used_bytes, vmem_used_bytes...)
KEYS = {
    "used": ("used_bytes",),
    "capacity": ("capacity_bytes", "available_bytes"),
    "exceeded": ("exceeded_bytes", "excess_bytes"),
    "requested": ("requested_bytes",),
    "free": ("free_bytes",),
    "required": ("required_bytes", "program_bytes"),
}


def _bytes(text: str) -> int:
    from tpudoctor.logs.sizes import parse_size

    return parse_size(text)


def _flatten(value, out: dict[str, list]) -> None:
    """Every key's values anywhere in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            out.setdefault(key, []).append(item)
            _flatten(item, out)
    elif isinstance(value, list):
        for item in value:
            _flatten(item, out)


def _close(found, expected: int) -> bool:
    return isinstance(found, int) and not isinstance(found, bool) and abs(found - expected) <= TOLERANCE * max(
        abs(expected), 1)


def _run(args: list[str]) -> tuple[int, dict]:
    done = subprocess.run(TOOL + args, capture_output=True, text=True, cwd=SET, timeout=120)
    try:
        return done.returncode, json.loads(done.stdout)
    except json.JSONDecodeError:
        return done.returncode, {}


def memory_reading(name: str) -> dict:
    rc, doc = _run(["memory", f"{name}.txt", "--format", "json"])
    findings = [f for f in doc.get("findings", []) if f.get("id") == "memory-oom"]
    listings = [listing for text in doc.get("texts", []) for listing in text.get("listings", [])]
    fixes = []
    for listing in listings:
        ranked = listing.get("fixes")
        if isinstance(ranked, list):
            fixes += [fix.get("id") if isinstance(fix, dict) else fix for fix in ranked]
    return {"rc": rc, "oom": bool(findings), "evidence": {"findings": findings, "listings": listings},
            "fixes": fixes}


def check_reading(name: str) -> dict:
    rc, doc = _run(["check", "--step", "4", "--log-file", f"{name}.txt", "--format", "json"])
    logs = [r for r in doc.get("results", []) if r.get("id") == "LOGS-001"]
    evidence = logs[0].get("evidence", {}) if logs else {}
    signature = str(evidence.get("signature", ""))
    oom = bool(logs) and logs[0].get("status") == "FAIL" and ("oom" in signature or "memory" in signature)
    fixes = [fix.get("id") for fix in evidence.get("fixes", []) if isinstance(fix, dict)]
    return {"rc": rc, "oom": oom, "signature": signature, "evidence": evidence, "fixes": fixes}


def score(label: dict, reading: dict) -> dict:
    values: dict[str, list] = {}
    _flatten(reading["evidence"], values)
    misses = []
    if reading["oom"] != label["is_oom"]:
        misses.append(f"read as OOM: {reading['oom']}")
    if label["is_oom"] and reading["oom"]:
        for figure in FIGURES:
            if figure not in label:
                continue
            expected = _bytes(label[figure])
            keys = [key for key in values if key.endswith(KEYS[figure]) and not key.startswith("largest_")]
            if not any(_close(v, expected) for key in keys for v in values[key]):
                misses.append(f"{figure} {label[figure]}")
        allocations = values.get("allocations", []) + values.get("largest_allocations", [])
        rows = [row for group in allocations if isinstance(group, list) for row in group if isinstance(row, dict)]
        for want in label.get("allocations", []):
            if not _matches(want, rows):
                misses.append(f"allocation {want.get('rank', '')} {want.get('shape') or want.get('op_name')}")
        if label.get("fix") and label.get("fix_in_buffers"):
            if not reading["fixes"] or reading["fixes"][0] != label["fix"]:
                misses.append(f"fix {label['fix']} not first ({reading['fixes'][:3] or 'none'})")
    return {"right": not misses, "misses": misses}


def _matches(want: dict, rows: list[dict]) -> bool:
    for row in rows:
        if "size" in want and not _close(row.get("size_bytes"), _bytes(want["size"])):
            continue
        if "size_bytes" in want and not _close(row.get("size_bytes"), want["size_bytes"]):
            continue
        if "shape" in want and row.get("shape") != want["shape"]:
            continue
        if "op_name" in want and row.get("op_name") != want["op_name"]:
            continue
        if "padding" in want and not _close(row.get("padding_bytes"), _bytes(want["padding"])):
            continue
        if "unpadded" in want and not _close(row.get("unpadded_bytes", row.get("unpadded_size_bytes")),
                                             _bytes(want["unpadded"])):
            continue
        return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the per-case results as JSON")
    args = parser.parse_args()
    labels = tomllib.loads((SET / "labels.toml").read_text())
    results = {}
    for name, label in labels.items():
        results[name] = {"memory": score(label, memory_reading(name)), "check": score(label, check_reading(name))}
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for name, result in results.items():
            cells = []
            for command in ("memory", "check"):
                r = result[command]
                cells.append(f"{command}: " + ("ok" if r["right"] else "MISS " + "; ".join(r["misses"])))
            print(f"{name:28s} " + " | ".join(cells))
    for command in ("memory", "check"):
        right = sum(result[command]["right"] for result in results.values())
        print(f"{command}: {right}/{len(results)} right")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
