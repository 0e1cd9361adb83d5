from __future__ import annotations

from packaging.version import Version

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_tensorflow
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat

_ON_VM = {"runtime_version": "tpu-vm-tf-2.16.1-pjrt", "accelerator_type": "v4-8", "generation": "v4",
          "on_tpu_vm": True, "source": "metadata.tpu_vm"}


class TensorflowMatchesRuntimeImage(Check):
    """The installed TensorFlow is the version the node's TensorFlow runtime image
    (tpu-vm-tf-X.Y.Z[-pod][-pjrt]) was built for; another version conflicts with the image's libtpu."""

    id = "RUNTIME-003"
    title = "TensorFlow matches the runtime image"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.target")
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("same version", {"packages.installed": {"tensorflow": "2.16.1"}, "runtime.target": _ON_VM}, Status.PASS),
        Example("pip upgraded TF", {"packages.installed": {"tensorflow": "2.18.0"}, "runtime.target": _ON_VM}, Status.FAIL),
        Example("patch differs", {"packages.installed": {"tensorflow": "2.16.2"}, "runtime.target": _ON_VM}, Status.WARN),
        Example("no TF", {"packages.installed": {"jax": "0.7.2"}, "runtime.target": _ON_VM}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        tf = installed_tensorflow(facts.require("packages.installed"))
        if tf is None:
            return self.skip("TensorFlow is not installed")
        target = facts.require("runtime.target")
        if not target.get("on_tpu_vm"):
            return self.skip("tpudoctor is not running on the TPU VM, so the packages here say nothing about the node")
        runtime_version = target.get("runtime_version")
        if not runtime_version:
            return self.skip("the node's runtime version is unknown (give --tpu so step 1 can read it)")
        image = load_compat().parse_tf_image(runtime_version)
        if image is None:
            return self.skip(f"the runtime image {runtime_version} is not a TensorFlow image; it fixes no TensorFlow version")
        dist, installed = tf
        evidence = {"tensorflow_distribution": dist, "tensorflow_installed": installed,
                    "runtime_version": runtime_version, "tensorflow_in_image": image.tensorflow_version}
        have, want = Version(installed), Version(image.tensorflow_version)
        if have.release[:3] == want.release[:3]:
            return self.passed(f"{dist} {installed} matches {runtime_version}", evidence=evidence)
        fix = remediation(
            f"Use the TensorFlow the image was built for, or recreate the node with the image for TensorFlow {installed}.",
            f"pip install {dist}=={image.tensorflow_version}",
            f"gcloud compute tpus tpu-vm create NAME --zone ZONE --accelerator-type TYPE "
            f"--version tpu-vm-tf-{have.base_version}{'-pod' if image.pod else ''}-pjrt",
        )
        message = f"{dist} {installed} is installed but the runtime image {runtime_version} is built for TensorFlow {image.tensorflow_version}"
        if have.release[:2] == want.release[:2]:
            return self.warn(message + " (patch release differs)", evidence=evidence, remediation=fix)
        return self.fail(message, evidence=evidence, remediation=fix)
