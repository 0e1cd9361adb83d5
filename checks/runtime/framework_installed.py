from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_frameworks
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step


class FrameworkInstalled(Check):
    """A TPU framework (TensorFlow, JAX or PyTorch/XLA) is installed in this Python environment.

    Read from package metadata; no framework is imported.
    """

    id = "RUNTIME-002"
    title = "A TPU framework is installed"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.target")
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("jax", {"packages.installed": {"jax": "0.7.2", "jaxlib": "0.7.2", "libtpu": "0.0.23"}}, Status.PASS),
        Example("nothing on a TPU VM", {"packages.installed": {"numpy": "2.0.0"},
                                        "runtime.target": {"on_tpu_vm": True, "accelerator_type": "v4-8"}},
                Status.FAIL),
        Example("nothing on a workstation", {"packages.installed": {"numpy": "2.0.0"}}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        installed = facts.require("packages.installed")
        found = installed_frameworks(installed)
        evidence = {"frameworks": found}
        if found:
            listed = ", ".join(f"{name} {version}" for name, version in found.items())
            return self.passed(listed, evidence=evidence)
        hint = " (torch is installed but torch_xla is not)" if "torch" in installed else ""
        target = facts.value("runtime.target") or {}
        # Off a TPU VM this environment may only be analysing profiles: worth a note, not a failure.
        verdict = self.fail if target.get("on_tpu_vm") else self.warn
        evidence["on_tpu_vm"] = bool(target.get("on_tpu_vm"))
        return verdict(
            f"no TensorFlow, JAX or PyTorch/XLA in this Python environment{hint}",
            evidence=evidence,
            remediation=remediation(
                "Install the framework your job uses, with its TPU extra so the matching libtpu comes along.",
                'pip install -U "jax[tpu]"',
                "pip install tensorflow-tpu",
                'pip install "torch_xla[tpu]"',
            ),
        )
