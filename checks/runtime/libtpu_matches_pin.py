from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_libtpu
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import satisfies

_JAX_PIN = {"jax": {"framework_version": "0.7.2", "requirement": "libtpu==0.0.23",
                    "source": "jax 0.7.2 package metadata ('tpu' extra)"}}


class LibtpuMatchesFrameworkPin(Check):
    """The installed libtpu is the version the framework pins (jax[tpu], torch_xla[tpu], tensorflow-tpu).

    The pin comes from the framework's own package metadata where it declares one, else from
    tpudoctor's runtime table. A mismatch shows up at start-up as PJRT API version errors.
    """

    id = "RUNTIME-004"
    title = "libtpu matches the framework's pin"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.libtpu_pins")
    severity = Severity.CRITICAL
    docs = "https://docs.jax.dev/en/latest/installation.html#google-cloud-tpu"
    examples = (
        Example("pinned", {"packages.installed": {"jax": "0.7.2", "libtpu": "0.0.23"}, "runtime.libtpu_pins": _JAX_PIN}, Status.PASS),
        Example("newer libtpu", {"packages.installed": {"jax": "0.7.2", "libtpu": "0.0.52"}, "runtime.libtpu_pins": _JAX_PIN}, Status.FAIL),
        Example("no libtpu", {"packages.installed": {"jax": "0.7.2"}, "runtime.libtpu_pins": _JAX_PIN}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        installed = facts.require("packages.installed")
        libtpu = installed_libtpu(installed)
        if libtpu is None:
            return self.skip("libtpu is not installed as a Python package, so there is no version to compare")
        pins = {fw: p for fw, p in facts.require("runtime.libtpu_pins").items() if p.get("requirement")}
        if not pins:
            return self.skip("no installed framework declares a libtpu version (tpudoctor's table has none for them either)")
        evidence = {"libtpu_installed": f"{libtpu[0]} {libtpu[1]}", "pins": pins}
        wrong = [(fw, p) for fw, p in pins.items() if not satisfies(p["requirement"], installed)]
        if not wrong:
            names = ", ".join(f"{fw} {p['framework_version']} ({p['requirement']})" for fw, p in pins.items())
            return self.passed(f"{libtpu[0]} {libtpu[1]} satisfies {names}", evidence=evidence)
        fw, pin = wrong[0]
        extra = {"jax": f'pip install "jax[tpu]=={pin["framework_version"]}"',
                 "torch-xla": f'pip install "torch_xla[tpu]=={pin["framework_version"]}"'}.get(fw)
        commands = [extra] if extra else []
        commands.append(f'pip install "{pin["requirement"]}"')
        return self.fail(
            f"{libtpu[0]} {libtpu[1]} is installed but {fw} {pin['framework_version']} needs {pin['requirement']} "
            f"(from {pin['source']})",
            evidence=evidence,
            remediation=remediation(
                "Install the libtpu the framework was built against; a mismatched libtpu fails with PJRT API errors.",
                *commands),
        )
