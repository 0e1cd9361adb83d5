from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

# TPU frameworks publish wheels for these minor versions (jax and tensorflow 2.16+ both need >= 3.10).
SUPPORTED_MINORS = ((3, 10), (3, 11), (3, 12), (3, 13))


class PythonVersionSupported(Check):
    """The interpreter is one that current TPU framework releases publish wheels for."""

    id = "RUNTIME-001"
    title = "Python version is supported by TPU frameworks"
    step = Step.RUNTIME
    facts = ("python.version",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/runtimes"
    examples = (
        Example("python 3.11", {"python.version": "3.11.7"}, Status.PASS),
        Example("python 3.8", {"python.version": "3.8.18"}, Status.FAIL),
        Example("python 3.14 is newer than the wheels", {"python.version": "3.14.0"}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        version = facts.require("python.version")
        major, minor = (int(p) for p in version.split(".")[:2])
        evidence = {"python_version": version, "supported": [f"{a}.{b}" for a, b in SUPPORTED_MINORS]}
        if (major, minor) in SUPPORTED_MINORS:
            return self.passed(f"Python {version}", evidence=evidence)
        newest = SUPPORTED_MINORS[-1]
        fix = remediation(
            "Use a Python that TPU framework wheels exist for, in a fresh virtual environment.",
            "python3.11 -m venv ~/tpu-venv && . ~/tpu-venv/bin/activate",
        )
        if (major, minor) > newest:
            return self.warn(f"Python {version} is newer than the framework wheels tpudoctor knows of",
                             evidence=evidence, remediation=fix)
        return self.fail(f"Python {version} is too old for current TPU framework releases",
                         evidence=evidence, remediation=fix)
