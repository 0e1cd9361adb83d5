"""backend-loads: JAX loads a backend (libtpu / PJRT) and sees devices."""

from __future__ import annotations

from tpudoctor.diag.measure import Inventory
from tpudoctor.diag.rule import DiagExample, DiagInput, DiagRule, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status

_BROKEN = Inventory(backend="none", jax_version="0.10.2", devices=[], process_count=0,
                    error="RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by "
                          "process with pid 4242. Not attempting to load libtpu.so in this process.")


class BackendLoads(DiagRule):
    """The accelerator's runtime loads (libtpu through PJRT on a TPU VM) and JAX sees at least one device of it;
    a backend that cannot load (the TPU held by another process, libtpu missing, a version mismatch) is a FAIL
    that quotes the runtime's error."""

    id = "backend-loads"
    title = "The accelerator runtime loads"
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/trouble-jax"
    examples = (DiagExample("eight devices", example_input(8), Status.PASS),
                DiagExample("TPU in use", example_input(0, inventory=_BROKEN), Status.FAIL))

    def evaluate(self, subject: DiagInput) -> Finding:
        inventory = subject.inventory
        if inventory.error or not inventory.devices:
            return self.judged(Status.FAIL, Severity.CRITICAL,
                               f"JAX {inventory.jax_version} could not load a backend: {inventory.error or 'no devices'}",
                               evidence={"error": inventory.error, "jax_version": inventory.jax_version},
                               host=subject.host, remediation=Remediation(
                                   text="Find what holds the device or why the runtime refuses it, then rerun.",
                                   commands=("sudo lsof -w /dev/accel* /dev/vfio/* 2>/dev/null",
                                             "tpudoctor check --step 1 --step 3")))
        kinds = sorted({d.kind for d in inventory.devices})
        return self.judged(Status.PASS, Severity.INFO,
                           f"{inventory.backend} backend: {len(inventory.devices)} device(s) ({', '.join(kinds)})",
                           evidence={"backend": inventory.backend, "devices": len(inventory.devices), "kinds": kinds,
                                     "jax_version": inventory.jax_version}, host=subject.host)
