from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

# Multi-regions and the region-name prefixes they cover.
MULTI_REGIONS = {"US": ("us-",), "EU": ("europe-",), "ASIA": ("asia-",)}
# Predefined dual-regions and their regions (custom dual-regions list theirs in dataLocations).
DUAL_REGIONS = {
    "NAM4": {"us-central1", "us-east1"},
    "EUR4": {"europe-north1", "europe-west4"},
    "EUR5": {"europe-west1", "europe-west2"},
    "EUR7": {"europe-west2", "europe-west3"},
    "EUR8": {"europe-west3", "europe-west6"},
    "ASIA1": {"asia-northeast1", "asia-northeast2"},
}

_TARGET = {"project": "p", "zone": "us-central2-b", "region": "us-central2"}


def _bucket(location: str, kind: str = "region") -> dict[str, Any]:
    return {"b": {"bucket": "b", "exists": True, "location": location, "location_type": kind, "data_locations": [],
                  "paths": ["gs://b/train"]}}


def placement(location: str, location_type: str | None, data_locations: list[str], region: str) -> str:
    """same | covers | continent | elsewhere: where the bucket is relative to the TPU's region."""
    loc = location.lower()
    if loc == region:
        return "same"
    regions = {d.lower() for d in data_locations} or DUAL_REGIONS.get(location.upper(), set())
    if region in regions:
        return "covers"
    if location.upper() in MULTI_REGIONS and region.startswith(MULTI_REGIONS[location.upper()]):
        return "continent"
    return "elsewhere"


class BucketInTpuRegion(Check):
    """Each bucket is in (or covers) the TPU's region: reading training data across regions is
    billed as egress per GB and adds latency to every read of the input pipeline."""

    id = "GCS-003"
    title = "Buckets are in the TPU's region"
    step = Step.GCS
    requires = ("GCS-002",)
    facts = ("gcs.buckets", "tpu.target")
    severity = Severity.MEDIUM
    docs = "https://cloud.google.com/storage/docs/locations"
    examples = (
        Example("same region", {"gcs.buckets": _bucket("US-CENTRAL2"), "tpu.target": _TARGET}, Status.PASS),
        Example("US multi-region", {"gcs.buckets": _bucket("US", "multi-region"), "tpu.target": _TARGET}, Status.PASS),
        Example("other region", {"gcs.buckets": _bucket("EUROPE-WEST4"), "tpu.target": _TARGET}, Status.WARN),
        Example("no zone", {"gcs.buckets": _bucket("EUROPE-WEST4"), "tpu.target": dict(_TARGET, zone=None, region=None)},
                Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        buckets = facts.require("gcs.buckets")
        target = facts.require("tpu.target")
        region = target.get("region")
        if not region:
            return self.skip("the TPU's zone is unknown: pass --zone (or run on the TPU VM) to compare bucket locations")
        located = {n: i for n, i in buckets.items() if i.get("location")}
        if not located:
            return self.skip("no bucket location could be read (see GCS-002)")
        where = {n: placement(i["location"], i.get("location_type"), i.get("data_locations") or [], region)
                 for n, i in located.items()}
        evidence = {"tpu_region": region, "tpu_zone": target.get("zone"),
                    "buckets": {n: {"location": located[n]["location"], "location_type": located[n].get("location_type"),
                                    "placement": where[n]} for n in located}}
        far = [n for n, p in where.items() if p == "elsewhere"]
        if not far:
            notes = [f"gs://{n} {located[n]['location']}" for n in located]
            return self.passed(f"bucket(s) in or covering {region}: {', '.join(notes)}", evidence=evidence)
        listing = ", ".join(f"gs://{n} is in {located[n]['location']}" for n in far)
        project = target.get("project")
        commands = []
        for n in far:
            commands.append(gcloud.bucket_create(f"{n}-{region}", region, project))
            for path in located[n].get("paths") or [f"gs://{n}"]:
                commands.append(f"gcloud storage rsync --recursive {path} {path.replace(f'gs://{n}', f'gs://{n}-{region}', 1)}")
        return self.warn(
            f"{listing}, the TPU is in {region}: every read crosses regions, billed as network egress per GB and "
            "slower (higher latency per read can starve the TPU input pipeline)",
            evidence=evidence,
            remediation=remediation(
                f"Keep training data, checkpoints and logs in a bucket in {region}: create one there, copy the "
                "data, and point the job at the copy.", *commands))
