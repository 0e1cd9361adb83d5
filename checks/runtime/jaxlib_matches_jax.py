from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import satisfies


class JaxlibMatchesJax(Check):
    """The installed jaxlib is within the range jax itself requires (its package metadata)."""

    id = "RUNTIME-010"
    title = "jaxlib matches jax"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.jaxlib_requirement")
    severity = Severity.HIGH
    docs = "https://docs.jax.dev/en/latest/installation.html"
    examples = (
        Example("matching", {"packages.installed": {"jax": "0.10.2", "jaxlib": "0.10.2"},
                             "runtime.jaxlib_requirement": "jaxlib<=0.10.2,>=0.10.1"}, Status.PASS),
        Example("old jaxlib", {"packages.installed": {"jax": "0.10.2", "jaxlib": "0.9.0"},
                               "runtime.jaxlib_requirement": "jaxlib<=0.10.2,>=0.10.1"}, Status.FAIL),
        Example("no jax", {"packages.installed": {}, "runtime.jaxlib_requirement": Unavailable("jax is not installed")},
                Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        requirement = facts.require("runtime.jaxlib_requirement")
        installed = facts.require("packages.installed")
        evidence = {"jax": installed.get("jax"), "jaxlib": installed.get("jaxlib"), "jax_requires": requirement}
        ok = satisfies(requirement, installed)
        if ok:
            return self.passed(f"jaxlib {installed['jaxlib']} satisfies {requirement}", evidence=evidence)
        what = "jaxlib is not installed" if ok is None else f"jaxlib {installed['jaxlib']} is installed"
        return self.fail(
            f"{what} but jax {installed.get('jax')} requires {requirement}", evidence=evidence,
            remediation=remediation("Install jax and jaxlib together.", f'pip install -U "jax[tpu]=={installed.get("jax")}"'),
        )
