from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.checks.runtime._packages import installed_libtpu
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat

_TF_AND_JAX = {"tensorflow": "2.16.1", "jax": "0.7.2", "libtpu": "0.0.23"}
_PINS = {"jax": {"framework_version": "0.7.2", "requirement": "libtpu==0.0.23", "source": "metadata"}}


class OneFrameworkLoadsLibtpu(Check):
    """At most one installed framework loads libtpu at start-up.

    TensorFlow, JAX and PyTorch/XLA each load libtpu and open the TPU; two in one environment
    fight over the chips or load a libtpu built for the other (pytorch/xla#3786,
    Kaggle/docker-python#1499). TPU_LOAD_LIBRARY=0 stops TensorFlow from loading it.
    """

    id = "RUNTIME-005"
    title = "Only one framework loads libtpu"
    step = Step.RUNTIME
    facts = ("packages.installed", "runtime.libtpu_pins", "runtime.env")
    severity = Severity.MEDIUM
    docs = "https://github.com/pytorch/xla/issues/3786"
    examples = (
        Example("jax only", {"packages.installed": {"jax": "0.7.2", "libtpu": "0.0.23"},
                             "runtime.libtpu_pins": _PINS, "runtime.env": {}}, Status.PASS),
        Example("tensorflow and jax", {"packages.installed": _TF_AND_JAX, "runtime.libtpu_pins": _PINS,
                                       "runtime.env": {}}, Status.WARN),
        Example("tensorflow opted out", {"packages.installed": _TF_AND_JAX, "runtime.libtpu_pins": _PINS,
                                         "runtime.env": {"TPU_LOAD_LIBRARY": "0"}}, Status.PASS),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        compat = load_compat()
        installed = facts.require("packages.installed")
        pins = facts.require("runtime.libtpu_pins")
        env = facts.require("runtime.env")
        libtpu = installed_libtpu(installed)
        loaders = [d for d in compat.libtpu_loaders if d in installed]
        if libtpu is None:
            # jax and torch_xla load libtpu only from the pip package; TensorFlow images ship their own.
            loaders = [d for d in loaders if d.startswith("tensorflow") or d == "tf-nightly"]
        tf_opted_out = env.get("TPU_LOAD_LIBRARY") == "0"
        active = [d for d in loaders if not (tf_opted_out and (d.startswith("tensorflow") or d == "tf-nightly"))]
        evidence = {"libtpu_loaders": {d: installed[d] for d in loaders},
                    "libtpu": f"{libtpu[0]} {libtpu[1]}" if libtpu else None,
                    "TPU_LOAD_LIBRARY": env.get("TPU_LOAD_LIBRARY")}
        if len(active) < 2:
            if tf_opted_out and len(loaders) >= 2:
                return self.passed(f"{', '.join(loaders)} are installed; TPU_LOAD_LIBRARY=0 keeps TensorFlow off libtpu",
                                   evidence=evidence)
            why = f"only {active[0]} loads libtpu" if active else "nothing here loads libtpu (no libtpu package installed)"
            return self.passed(why, evidence=evidence)
        pinned = {d: pins[d]["requirement"] for d in active if d in pins and pins[d].get("requirement")}
        tf = [d for d in active if d.startswith("tensorflow") or d == "tf-nightly"]
        others = [d for d in active if d not in tf]
        if tf:
            return self.warn(
                f"{' and '.join(tf + others)} are installed together and each loads libtpu at start-up",
                evidence=evidence,
                remediation=remediation(
                    "If TensorFlow is only there for TensorBoard or tf.data, stop it loading libtpu; otherwise "
                    "use one framework per virtual environment.",
                    f"export {compat.tensorflow_opt_out}",
                ),
            )
        differing = len(set(pinned.values())) > 1
        evidence["pins"] = pinned
        return self.warn(
            f"{' and '.join(others)} are installed together"
            + (f" and pin different libtpu versions ({', '.join(f'{d}: {r}' for d, r in pinned.items())})" if differing else ""),
            evidence=evidence,
            remediation=remediation(
                "Keep JAX and PyTorch/XLA in separate virtual environments, each with the libtpu it pins.",
                "python3 -m venv ~/jax-env && ~/jax-env/bin/pip install 'jax[tpu]'",
                "python3 -m venv ~/xla-env && ~/xla-env/bin/pip install 'torch_xla[tpu]'",
            ),
        )
