from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_libtpu
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat

_VM = {"runtime_version": "tpu-ubuntu2204-base", "accelerator_type": "v4-8", "generation": "v4",
       "on_tpu_vm": True, "source": "metadata.tpu_vm"}


class FrameworksHaveTpuSupport(Check):
    """On a TPU VM, the installed frameworks are TPU builds: JAX has libtpu (else it silently runs
    on the CPU) and TensorFlow is not the CPU-only tensorflow-cpu wheel."""

    id = "RUNTIME-006"
    title = "Frameworks on this TPU VM can use the TPU"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.target")
    severity = Severity.CRITICAL
    docs = "https://docs.jax.dev/en/latest/installation.html#google-cloud-tpu"
    examples = (
        Example("jax with libtpu", {"packages.installed": {"jax": "0.7.2", "jaxlib": "0.7.2", "libtpu": "0.0.23"},
                                    "runtime.target": _VM}, Status.PASS),
        Example("jax without libtpu", {"packages.installed": {"jax": "0.7.2", "jaxlib": "0.7.2"},
                                       "runtime.target": _VM}, Status.FAIL),
        Example("tensorflow-cpu", {"packages.installed": {"tensorflow-cpu": "2.16.1"}, "runtime.target": _VM}, Status.FAIL),
        Example("not a TPU VM", {"packages.installed": {"jax": "0.7.2"},
                                 "runtime.target": {**_VM, "on_tpu_vm": False}}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        installed = facts.require("packages.installed")
        target = facts.require("runtime.target")
        if not target.get("on_tpu_vm"):
            return self.skip("tpudoctor is not running on a TPU VM, so a CPU-only framework here is expected")
        compat = load_compat()
        problems: list[str] = []
        commands: list[str] = []
        if "jax" in installed and installed_libtpu(installed) is None:
            problems.append(f"jax {installed['jax']} has no libtpu, so it runs on the CPU")
            commands.append(f'pip install "jax[tpu]=={installed["jax"]}"')
        cpu_tf = [d for d in compat.tf_cpu_only_distributions if d in installed]
        if cpu_tf and not any(d in installed for d in compat.tf_tpu_distributions):
            problems.append(f"{cpu_tf[0]} {installed[cpu_tf[0]]} is a CPU-only build of TensorFlow")
            commands.append(f"pip uninstall -y {cpu_tf[0]} && pip install tensorflow-tpu")
        evidence = {"accelerator_type": target.get("accelerator_type"),
                    "packages": {k: v for k, v in installed.items() if k in ("jax", "jaxlib", "libtpu", "libtpu-nightly",
                                                                               "tensorflow", "tensorflow-cpu", "tensorflow-tpu")}}
        if not problems:
            return self.passed("the installed frameworks are TPU builds", evidence=evidence)
        return self.fail(
            "; ".join(problems), evidence=evidence,
            remediation=remediation("Install the TPU build of the framework (it brings the matching libtpu).", *commands),
        )
