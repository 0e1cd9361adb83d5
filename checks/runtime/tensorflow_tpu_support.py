from __future__ import annotations

from packaging.version import Version

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_tensorflow
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat


class TensorflowReleaseSupportsTpu(Check):
    """The installed TensorFlow is a release with working TPU support: not newer than the last
    TPU release tpudoctor knows, not one with reported TPU breakage, and not on TPU7x (no TensorFlow)."""

    id = "RUNTIME-008"
    title = "TensorFlow release supports TPUs"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.target")
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("2.16.1", {"packages.installed": {"tensorflow": "2.16.1"}, "runtime.target": Unavailable("no node")}, Status.PASS),
        Example("2.18.0 reported broken", {"packages.installed": {"tensorflow-tpu": "2.18.0"},
                                           "runtime.target": Unavailable("no node")}, Status.WARN),
        Example("TF on TPU7x", {"packages.installed": {"tensorflow": "2.16.1"},
                                "runtime.target": {"accelerator_type": "tpu7x-8", "generation": "tpu7x",
                                                   "runtime_version": None, "on_tpu_vm": True}}, Status.FAIL),
        Example("tensorflow-cpu", {"packages.installed": {"tensorflow-cpu": "2.21.0"},
                                   "runtime.target": Unavailable("no node")}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        compat = load_compat()
        tf = installed_tensorflow(facts.require("packages.installed"))
        if tf is None:
            return self.skip("TensorFlow is not installed")
        dist, version_text = tf
        if dist in compat.tf_cpu_only_distributions:
            return self.skip(f"{dist} {version_text} is a CPU-only build; it has no TPU support to judge")
        target = facts.value("runtime.target") or {}
        version = Version(version_text)
        evidence = {"tensorflow_distribution": dist, "tensorflow_version": version_text,
                    "newest_tpu_runtime": str(compat.tf_newest_runtime),
                    "newest_tpu_package": str(compat.tf_newest_package), "table_version": compat.version}
        if target.get("generation") and not compat.generations[target["generation"]].tensorflow:
            return self.fail(
                f"{target.get('accelerator_type')} ({target['generation']}) does not support TensorFlow",
                evidence=evidence, severity=Severity.CRITICAL,
                remediation=remediation("Use JAX (or PyTorch/XLA) on this generation, or a TPU generation that runs TensorFlow.",
                                        'pip install -U "jax[tpu]"'))
        for problem in compat.tf_known_problems:
            if version_text in problem["versions"]:
                return self.warn(f"{dist} {version_text}: {problem['text']}", evidence=evidence,
                                 remediation=remediation(
                                     f"Use TensorFlow {compat.tf_newest_runtime} or another release with a tpu-vm-tf runtime image.",
                                     f"pip install {dist}=={compat.tf_newest_runtime}", docs_url=problem["docs"]))
        if version > compat.tf_newest_package:
            return self.warn(
                f"{dist} {version_text} is newer than the last TensorFlow release with TPU support tpudoctor knows "
                f"({compat.tf_newest_package}); TPU support may have ended",
                evidence=evidence,
                remediation=remediation("Pin TensorFlow to a release with TPU wheels and runtime images.",
                                        f"pip install tensorflow-tpu=={compat.tf_newest_package}"))
        return self.passed(f"{dist} {version_text} has TPU support", evidence=evidence)
