"""chips-enumerate: every chip the VM should have is there."""

from __future__ import annotations

from tpudoctor.diag.expected import ExpectedCount, expected_count
from tpudoctor.diag.measure import Inventory
from tpudoctor.diag.rule import DiagInput, DiagRule, Example, example_devices, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status

_NO_BACKEND = Inventory(backend="none", jax_version="0.10.2", devices=[], process_count=0,
                        error="RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: "
                              "libtpu.so: cannot open shared object file: No such file or directory")
_V4_HOST = Inventory(backend="tpu", jax_version="0.10.2", devices=example_devices(3, "tpu", "TPU v4"), process_count=1)


def _counted(seen: int, expected: ExpectedCount) -> str:
    """``3 of 4 chip(s)``, or in devices where a chip shows as several (a v3 chip: two)."""
    if expected.devices_per_chip == 1:
        return f"{seen} of {expected.chips} chip(s)"
    return (f"{seen} of {expected.devices} JAX devices ({expected.chips} {expected.generation} chip(s), "
            f"{expected.devices_per_chip} devices each)")


class ChipsEnumerate(DiagRule):
    """As many devices as the VM's accelerator type gives a host (``--expect-chips N`` overrides): a v4-8 host
    shows 4 chips as 4 JAX devices, a v3-8 host 4 chips as 8, a v5litepod-8 or v6e-8 host 8 as 8. Fewer is a FAIL
    (a chip that dropped off the bus, or a runtime told to use fewer: TPU_VISIBLE_CHIPS); on the CPU stand-in the
    devices are virtual, so the FAIL has low confidence and no host to replace. More than expected is no dead chip:
    a WARN that the setting or the type is wrong. When neither says a count (a GPU or CPU without a type) the count
    is reported with confidence unknown; when no backend loaded the count could not be taken: a SKIP."""

    id = "chips-enumerate"
    title = "Every chip enumerates"
    docs = "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm"
    examples = (Example("8 of 8", example_input(8, expected=expected_count(8, None)), Status.PASS),
                Example("7 of 8", example_input(7, expected=expected_count(8, None)), Status.FAIL),
                Example("3 of a v4-8 host's 4", example_input(0, inventory=_V4_HOST,
                                                                 expected=expected_count(None, "v4-8")), Status.FAIL),
                Example("8 where 4 are expected", example_input(8, expected=expected_count(4, None)), Status.WARN),
                Example("no accelerator type", example_input(8), Status.PASS),
                Example("no backend loaded", example_input(0, inventory=_NO_BACKEND,
                                                               expected=expected_count(None, "v4-8")), Status.SKIP))

    def evaluate(self, subject: DiagInput) -> Finding:
        seen, expected = len(subject.inventory.devices), subject.expected
        if not seen:
            return self.judged(Status.SKIP, Severity.INFO,
                               "not counted: no backend loaded, so JAX lists no device (the runtime check says why)",
                               evidence={"devices": 0, "confidence": "unknown", "backend_error": subject.inventory.error,
                                         "expected_devices": expected.devices if expected else None},
                               host=subject.host)
        if expected is None:
            return self.judged(Status.PASS, Severity.INFO, f"{seen} device(s); the expected count is unknown",
                               evidence={"devices": seen, "confidence": "unknown",
                                         "confidence_why": "no accelerator type says how many chips a host has "
                                                           "(give --expect-chips N)"}, host=subject.host)
        evidence = {"devices": seen, "expected_devices": expected.devices, "expected_chips": expected.chips,
                    "devices_per_chip": expected.devices_per_chip, "expected_from": expected.source,
                    "backend": subject.inventory.backend}
        whence = f"expected from {expected.source}"
        if seen == expected.devices:
            return self.judged(Status.PASS, Severity.INFO, f"{_counted(seen, expected)} ({whence})", evidence={**evidence, "confidence": "high"},
                               host=subject.host)
        if seen > expected.devices:
            return self.judged(Status.WARN, Severity.LOW,
                               f"{seen} device(s), more than the {expected.devices} {whence}: no chip is missing; "
                               "the expected count is wrong",
                               evidence={**evidence, "confidence": "medium",
                                         "confidence_why": "a host cannot show chips it does not have: the setting "
                                                           "or the accelerator type undercounts"},
                               host=subject.host, remediation=Remediation(
                                   text=f"Correct {expected.source}: this host shows {seen} device(s).",
                                   commands=("env | grep -i TPU_ACCELERATOR_TYPE",)))
        if subject.inventory.backend == "cpu":
            return self.judged(Status.FAIL, Severity.HIGH, f"{_counted(seen, expected)} enumerate ({whence}; the CPU backend's "
                               "stand-ins)",
                               evidence={**evidence, "confidence": "low",
                                         "confidence_why": "the CPU backend's devices are virtual (--cpu-devices, "
                                                           "XLA's host device count), not the chips"},
                               host=subject.host, remediation=Remediation(
                                   text="These are the CPU backend's virtual devices, not the chips: run on the "
                                        "accelerator's backend (JAX_PLATFORMS unset, jax[tpu] installed) to count "
                                        "the chips, or give the stand-in as many devices as the chips.",
                                   commands=("env | grep -E '^(JAX_PLATFORMS|XLA_FLAGS)='", "tpudoctor diag -r 1")))
        return self.judged(Status.FAIL, Severity.CRITICAL, f"{_counted(seen, expected)} enumerate ({whence})",
                           evidence={**evidence, "confidence": "high"}, host=subject.host,
                           remediation=Remediation(text="REPLACE-HOST if no setting hides the chips: check "
                                                        "TPU_VISIBLE_CHIPS / TPU_PROCESS_BOUNDS, then the PCI bus.",
                                                   commands=("env | grep -i TPU_", "lspci -d 1ae0:",
                                                             "ls -l /dev/accel* /dev/vfio")))
