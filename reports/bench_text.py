"""Bench result as plain text for a terminal (not a stable surface; use json to parse)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.reports.bench_summary import headline, loss_line, mismatch_lines, verdict_line
from tpudoctor.reports.escape import plain


def render(document: Mapping[str, Any]) -> str:
    key = document["key"]
    m = document["measurement"]
    versions = document["environment"]["versions"]
    lines = [
        f"tpudoctor bench: {headline(document)}",
        f"  compile (first step): {m['compile_time_ms']:,.0f} ms   steady step: {m['step_time_ms_median']:.3f} ms",
        f"  windows (examples/s): {', '.join(f'{s:,.0f}' for s in m['samples'])}",
        f"  {loss_line(document)}",
        f"  key: model_version {key['model_version']}, accelerator {key['accelerator_type']}, "
        f"topology {key['topology'] or '-'}, {key['framework']} {key['framework_version']}, "
        f"libtpu {key['libtpu_version'] or '-'}",
        "  versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v),
    ]
    if document.get("profile_dir"):
        lines.append(f"  profile: {document['profile_dir']} (read it with: tpudoctor profile analyze {document['profile_dir']})")
    verdict = verdict_line(document)
    if verdict:
        lines.append(f"  {verdict}")
        mismatches = mismatch_lines(document)
        if mismatches:
            lines.append("  compared across different keys (--allow-mismatch): " + "; ".join(mismatches))
    return "\n".join(plain(line) for line in lines) + "\n"  # each line holds values from the document
