"""One device memory profile in the memory report: what is live on each device, where it was made, and whether one
device holds far more than its peers (arrays that were never sharded pile up on the first device)."""

from __future__ import annotations

import statistics
from typing import Any

from tpudoctor.findings import (
    Confidence,
    ConfidenceLevel,
    Finding,
    Remediation,
    Scope,
    Severity,
    Status,
)
from tpudoctor.memory.fix_rule import FINDING_KIND
from tpudoctor.units import format_bytes

TOP_SITES = 10
IMBALANCE_RATIO = 2.0
"""A device holding this many times the median of the others' live bytes stands out."""
IMBALANCE_MIN_BYTES = 64 << 20
"""...and by at least this much: a few small arrays on one device are not worth a finding."""
SHARDING_COMMANDS = (
    "python -c \"import jax; print(jax.devices())\"  # the devices a sharding can spread over",
    "# place arrays with a sharding: x = jax.device_put(x, jax.sharding.NamedSharding(mesh, P('data')))",
)


def profile_section(profile, findings: list[Finding]) -> dict[str, Any]:
    """The profile's section (per device, the top sites) and its findings: one summary, and one for a device that
    stands out."""
    devices = profile.per_device()
    sites = profile.top_sites(TOP_SITES)
    total = int(devices["bytes"].sum())
    rows = [{"device": str(r.device), "bytes": int(r.bytes), "buffer_bytes": int(r.buffer_bytes),
             "buffers": int(r.buffers), "executable_bytes": int(r.executable_bytes)} for r in devices.itertuples()]
    top = [{"site": str(r.site), "kind": str(r.kind), "bytes": int(r.bytes), "count": int(r.count),
            "devices": int(r.devices), "share": round(r.bytes / total, 4) if total else 0.0}
           for r in sites.itertuples()]
    section = {"source": profile.source, "sample_types": profile.sample_types, "total_bytes": total,
               "samples": int(len(profile.frame)), "devices": rows, "top_sites": top}
    where = Scope.of(hosts=[], chips=[r["device"] for r in rows])
    largest = f"; most made at {top[0]['site']} ({format_bytes(int(top[0]['bytes']))})" if top else ""
    summary = Finding(
        id="memory-device-profile", step=None, title=f"live device memory in {profile.source}", status=Status.PASS,
        severity=Severity.INFO, kind=FINDING_KIND, scope=where,
        message=f"{format_bytes(total)} live on {len(rows)} device(s) when the profile was taken{largest}",
        evidence={"source": profile.source, "total_bytes": total, "devices": rows[:16], "top_sites": top[:5]})
    summary.confidence = Confidence(ConfidenceLevel.HIGH, ("the runtime's own list of live buffers",))
    findings.append(summary)
    standing = _standing_out(rows)
    if standing is not None:
        findings.append(standing(profile.source, top))
    return section


def _standing_out(rows: list[dict[str, Any]]):
    if len(rows) < 2:
        return None
    first, median = rows[0], statistics.median(r["bytes"] for r in rows[1:])
    if first["bytes"] - median < IMBALANCE_MIN_BYTES or first["bytes"] < IMBALANCE_RATIO * max(median, 1):
        return None

    def finding(source: str, top: list[dict[str, Any]]) -> Finding:
        ratio = first["bytes"] / median if median else float("inf")
        times = f"{ratio:.1f}x" if median else "all"
        sites = "; ".join(f"{s['site']} {format_bytes(s['bytes'])}" for s in top[:3] if s["kind"] != "executable")
        found = Finding(
            id="memory-device-imbalance", step=None, title=f"one device holds most of the memory in {source}",
            status=Status.WARN, severity=Severity.MEDIUM, kind=FINDING_KIND,
            scope=Scope.of(chips=[first["device"]]),
            message=(f"{first['device']} holds {format_bytes(first['bytes'])}, {times} the median of the other "
                     f"{len(rows) - 1} device(s) ({format_bytes(median)}): arrays placed there whole, not sharded"
                     + (f"; the largest sites: {sites}" if sites else "")),
            evidence={"device": first["device"], "bytes": first["bytes"], "others_median_bytes": int(median),
                      "ratio": None if not median else round(ratio, 3), "devices": len(rows)},
            remediation=Remediation(
                "Shard the arrays made at those sites over the mesh (jax.device_put with a NamedSharding, or "
                "with_sharding_constraint inside jit) instead of leaving them on the default device.",
                SHARDING_COMMANDS))
        found.confidence = Confidence(ConfidenceLevel.MEDIUM, (
            "live bytes per device from the runtime; that the arrays should be sharded is a guess from their "
            "placement (a replicated cache on one device is sometimes on purpose)",))
        return found

    return finding
