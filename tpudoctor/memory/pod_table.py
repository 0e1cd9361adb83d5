"""Pod-wide memory: every chip's (device allocator's) peak across the hosts, their median, and the chips more than
``max(OUTLIER_MIN_FRACTION x median, OUTLIER_MADS x MAD)`` above it."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any

from tpudoctor.findings import Finding, Remediation, Scope, Severity, Status
from tpudoctor.memory.fix_rule import FINDING_KIND
from tpudoctor.units import format_bytes

OUTLIER_MIN_FRACTION = 0.05
"""A chip is named only when this share of the median above it, at least..."""
OUTLIER_MADS = 4.0
"""...and more than this many median absolute deviations above it."""
HOST_ALLOCATOR = re.compile(r"host|cpu|pinned", re.IGNORECASE)
"""Allocators that are not a chip's memory (TensorFlow's ``gpu_host_bfc``, a CPU allocator)."""


def chip_outliers(peaks: Sequence[int]) -> dict[str, Any]:
    """The median of ``peaks``, their MAD, the bytes above the median a chip must exceed to be named
    (``max(OUTLIER_MIN_FRACTION x median, OUTLIER_MADS x MAD)``) and the indices of those that do."""
    median = statistics.median(peaks)
    mad = statistics.median(abs(p - median) for p in peaks)
    threshold = max(OUTLIER_MIN_FRACTION * median, OUTLIER_MADS * mad)
    return {"median_bytes": int(median), "mad_bytes": int(mad), "threshold_bytes": int(threshold),
            "outliers": [i for i, p in enumerate(peaks) if p - median > threshold]}


def pod_section(hosts: list[dict[str, Any]], findings: list[Finding]) -> dict[str, Any]:
    chips = [{"host": h["host"], "allocator": a["allocator"], "peak_bytes": a["peak_bytes"],
              "capacity_bytes": a["capacity_bytes"], "time_ms": a["time_ms"], "step": a["step"]}
             for h in hosts for a in h["allocators"] if a["chip"]]
    pod: dict[str, Any] = {"chips": chips, "median_bytes": None, "mad_bytes": None, "threshold_bytes": None,
                           "spread_fraction": None, "outliers": [], "verdict": ""}
    if len(chips) < 2:
        pod["verdict"] = ("no chip's allocator events in the input: no peaks to compare" if not chips
                          else "one chip: no peers to compare its peak with")
        return pod
    peaks = [c["peak_bytes"] for c in chips]
    judged = chip_outliers(peaks)
    median = judged["median_bytes"]
    pod.update({k: judged[k] for k in ("median_bytes", "mad_bytes", "threshold_bytes")})
    pod["spread_fraction"] = round((max(peaks) - min(peaks)) / median, 6) if median else 0.0
    for chip in chips:
        chip["above_median_fraction"] = round((chip["peak_bytes"] - median) / median, 6) if median else 0.0
    multi_host = len({c["host"] for c in chips}) > 1
    name = (lambda c: f"{c['host']} chip {c['allocator']}") if multi_host else (lambda c: f"chip {c['allocator']}")
    for i in judged["outliers"]:
        chip = chips[i]
        peers = statistics.median(p for j, p in enumerate(peaks) if j != i)
        above = chip["peak_bytes"] - peers
        pod["outliers"].append({"host": chip["host"], "allocator": chip["allocator"], "peak_bytes": chip["peak_bytes"],
                                "peers_median_bytes": int(peers), "above_bytes": int(above),
                                "above_fraction": round(above / peers, 6) if peers else None})
    evidence = {k: pod[k] for k in ("median_bytes", "mad_bytes", "threshold_bytes", "spread_fraction")}
    evidence["chips"] = len(chips)
    if pod["outliers"]:
        words = "; ".join(f"{name(chips[i])} peaks at {format_bytes(o['peak_bytes'])}, "
                          f"{format_bytes(o['above_bytes'])} ({100 * (o['above_fraction'] or 0):.1f}%) above its "
                          f"peers' median of {format_bytes(o['peers_median_bytes'])}"
                          for i, o in zip(judged["outliers"], pod["outliers"], strict=True))
        pod["verdict"] = words
        findings.append(Finding(
            id="memory-chip-outlier", step=None, title="a chip holds more memory than its peers", status=Status.WARN,
            severity=Severity.MEDIUM, kind=FINDING_KIND, message=words + f" (threshold: "
            f"{format_bytes(judged['threshold_bytes'])} above the median of {format_bytes(median)})",
            scope=Scope.of(hosts=sorted({chips[i]["host"] for i in judged["outliers"]}),
                           chips=[chips[i]["allocator"] for i in judged["outliers"]]),
            evidence={**evidence, "outliers": pod["outliers"]},
            remediation=Remediation("look at what that chip holds that its peers do not (its peak's buffers "
                                    "below): an uneven sharding, a replicated array, or work only it does "
                                    "(logging, checkpointing, the loss on chip 0)")))
    else:
        pod["verdict"] = (f"no chip stands out: {len(chips)} chips' peaks within {format_bytes(max(peaks) - min(peaks))}"
                          f" ({100 * pod['spread_fraction']:.2f}%) of each other, median "
                          f"{format_bytes(median)}, MAD {format_bytes(judged['mad_bytes'])}; a chip would need "
                          f"more than {format_bytes(judged['threshold_bytes'])} above the median")
        findings.append(Finding(
            id="memory-chip-outlier", step=None, title="no chip holds more memory than its peers", status=Status.PASS,
            severity=Severity.INFO, kind=FINDING_KIND, message=pod["verdict"], evidence=evidence))
    return pod
