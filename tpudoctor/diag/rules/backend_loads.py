"""backend-loads: JAX loads a backend (libtpu / PJRT) and sees devices."""

from __future__ import annotations

import dataclasses
import re

from tpudoctor.diag.measure import Inventory
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status

_BROKEN = Inventory(backend="none", jax_version="0.10.2", devices=[], process_count=0,
                    error="RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by "
                          "process with pid 4242. Not attempting to load libtpu.so in this process.")
# The two below are JAX 0.10.2's own words, raised with JAX_PLATFORMS=tpu where libtpu is not installed, and with
# JAX_PLATFORMS=bogus.
_NO_LIBTPU = dataclasses.replace(_BROKEN, jax_platforms="tpu", error=(
    "RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: cannot open "
    "shared object file: No such file or directory (set JAX_PLATFORMS='' to automatically choose an available "
    "backend)"))
_UNKNOWN_PLATFORM = dataclasses.replace(_BROKEN, jax_platforms="bogus", error=(
    "RuntimeError: Unable to initialize backend 'bogus': Backend 'bogus' is not in the list of known backends: "
    "['cpu', 'tpu']. (set JAX_PLATFORMS='' to automatically choose an available backend)"))

_NO_JAX = re.compile(r"No module named '?jax(?:lib)?'?\b")
_UNKNOWN_BACKEND = re.compile(r"Backend '(?P<name>[^']*)' is not in the list of known backends|Unknown backend")
_LIBTPU_MISSING = re.compile(r"libtpu\.so: cannot open shared object file|Failed to open libtpu\.so|"
                             r"No module named '?libtpu")


@dataclasses.dataclass(frozen=True)
class Cause:
    what: str
    """The cause, in words (the finding's message leads with it)."""
    remediation: Remediation


def cause_of(inventory: Inventory) -> Cause:
    """Why the backend did not load, from the runtime's own words: JAX missing, JAX_PLATFORMS naming a backend JAX
    lacks, libtpu missing; else the log catalog's signature of the error (the TPU held by another process, ...);
    else the error quoted with the checks of the node and runtime."""
    error, platforms = inventory.error or "", inventory.jax_platforms
    unset = ("unset JAX_PLATFORMS",) if platforms else ()
    if _NO_JAX.search(error):
        return Cause("JAX is not installed", Remediation(
            text="Install JAX (with its TPU extra on a TPU VM).", commands=('pip install -U "jax[tpu]"',)))
    if _UNKNOWN_BACKEND.search(error):
        return Cause(f"JAX_PLATFORMS={platforms or ''} names a backend this JAX does not have", Remediation(
            text="Unset JAX_PLATFORMS (JAX then picks the TPU where libtpu is installed, else the CPU), or set it "
                 "to a backend the error lists.",
            commands=(*unset, "tpudoctor diag -r 1")))
    if _LIBTPU_MISSING.search(error):
        pin = f"=={inventory.jax_version}" if inventory.jax_version[:1].isdigit() else ""
        forced = (f" Elsewhere JAX_PLATFORMS={platforms} asks for a TPU this machine does not have: unset it."
                  if platforms else "")
        return Cause("libtpu is not installed", Remediation(
            text=f"On a TPU VM, install libtpu through JAX's TPU extra, at this JAX's version.{forced}",
            commands=(f'pip install "jax[tpu]{pin}"', *unset),
            docs_url="https://docs.jax.dev/en/latest/installation.html#google-cloud-tpu"))
    from tpudoctor.logdiag import diagnose_text

    known = [(f.title, f.remediation) for f in diagnose_text(error, "the backend's error")
             if f.id != "unrecognised-failure" and f.remediation is not None]
    if known:
        title, remediation = known[0]
        return Cause(title, remediation)
    return Cause("the runtime refused it", Remediation(
        text="Read the runtime's error; the node and runtime checks (steps 1 and 3) say what else is wrong.",
        commands=("tpudoctor check --step 1 --step 3",)))


class BackendLoads(DiagRule):
    """The accelerator's runtime loads (libtpu through PJRT on a TPU VM) and JAX sees at least one device of it;
    a backend that cannot load (the TPU held by another process, libtpu missing, JAX_PLATFORMS naming a backend
    JAX lacks, a version mismatch) is a FAIL that quotes the runtime's error and whose fix follows it."""

    id = "backend-loads"
    title = "The accelerator runtime loads"
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/trouble-jax"
    examples = (Example("eight devices", example_input(8), Status.PASS),
                Example("TPU in use", example_input(0, inventory=_BROKEN), Status.FAIL),
                Example("libtpu missing", example_input(0, inventory=_NO_LIBTPU), Status.FAIL),
                Example("JAX_PLATFORMS names no backend", example_input(0, inventory=_UNKNOWN_PLATFORM),
                            Status.FAIL))

    def evaluate(self, subject: DiagInput) -> Finding:
        inventory = subject.inventory
        if inventory.error or not inventory.devices:
            cause = cause_of(inventory)
            return self.judged(Status.FAIL, Severity.CRITICAL,
                               f"JAX {inventory.jax_version} could not load a backend ({cause.what}): "
                               f"{inventory.error or 'no devices'}",
                               evidence={"error": inventory.error, "cause": cause.what,
                                         "jax_platforms": inventory.jax_platforms,
                                         "jax_version": inventory.jax_version},
                               host=subject.host, remediation=cause.remediation)
        kinds = sorted({d.kind for d in inventory.devices})
        return self.judged(Status.PASS, Severity.INFO,
                           f"{inventory.backend} backend: {len(inventory.devices)} device(s) ({', '.join(kinds)})",
                           evidence={"backend": inventory.backend, "devices": len(inventory.devices), "kinds": kinds,
                                     "jax_version": inventory.jax_version}, host=subject.host)
