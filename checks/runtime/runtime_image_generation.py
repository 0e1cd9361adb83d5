from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat


def _target(runtime_version: str, accelerator_type: str, generation: str) -> dict:
    return {"runtime_version": runtime_version, "accelerator_type": accelerator_type, "generation": generation,
            "on_tpu_vm": False, "source": "tpu.node"}


class RuntimeImageMatchesGeneration(Check):
    """The node's runtime image is one meant for its TPU generation (v2-alpha-tpuv6e for v6e,
    tpu-vm-tf-X.Y.Z-pjrt from TF 2.15 on v5e/v5p/v6e, no TensorFlow on TPU7x, ...)."""

    id = "RUNTIME-007"
    title = "Runtime image suits the TPU generation"
    step = Step.RUNTIME
    facts = ("runtime.target",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("v6e image on v6e", {"runtime.target": _target("v2-alpha-tpuv6e", "v6e-8", "v6e")}, Status.PASS),
        Example("v6e image on v5e", {"runtime.target": _target("v2-alpha-tpuv6e", "v5litepod-8", "v5e")}, Status.FAIL),
        Example("TensorFlow on TPU7x", {"runtime.target": _target("tpu-vm-tf-2.16.1-pjrt", "tpu7x-8", "tpu7x")}, Status.FAIL),
        Example("unknown image", {"runtime.target": _target("my-custom-image", "v4-8", "v4")}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        target = facts.require("runtime.target")
        runtime_version, accelerator_type = target.get("runtime_version"), target.get("accelerator_type")
        if not runtime_version:
            return self.skip("the node's runtime version is unknown (give --tpu so step 1 can read it)")
        compat = load_compat()
        accelerator = compat.accelerator(accelerator_type)
        if accelerator is None:
            return self.skip(f"accelerator type {accelerator_type!r} is not in tpudoctor's table (v{compat.version})")
        generation = accelerator.generation
        verdict = compat.image_verdict(runtime_version, generation)
        evidence = {"runtime_version": runtime_version, "accelerator_type": accelerator_type,
                    "generation": generation.name, "table_version": compat.version}
        if not verdict.known:
            return self.skip(f"{verdict.reason} (v{compat.version}); cannot judge it", evidence=evidence)
        if verdict.suitable:
            return self.passed(f"{runtime_version} suits {accelerator_type}", evidence=evidence)
        suitable = [p.pattern.strip("^$") for p, gens in compat.images if generation.name in gens and "*" not in p.pattern]
        suggestion = suitable[0] if suitable else "a Compute Engine or GKE image for this generation"
        return self.fail(
            verdict.reason, evidence=evidence,
            remediation=remediation(
                f"Recreate the node with a runtime image for {generation.name} "
                f"({', '.join(suitable) or suggestion}; TensorFlow: tpu-vm-tf-X.Y.Z[-pod]-pjrt where supported).",
                f"gcloud compute tpus tpu-vm create NAME --zone ZONE --accelerator-type {accelerator_type} --version {suggestion}",
            ),
        )
