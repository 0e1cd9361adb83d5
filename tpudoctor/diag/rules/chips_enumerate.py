"""chips-enumerate: every chip the VM should have is there."""

from __future__ import annotations

from tpudoctor.diag.rule import DiagExample, DiagInput, DiagRule, example_input
from tpudoctor.findings import Finding, Remediation, Severity, Status


class ChipsEnumerate(DiagRule):
    """As many devices as the VM's accelerator type gives a host (a v5litepod-8 host: 8 chips; a v4-8 host: 4).
    A chip missing is a FAIL (a chip that dropped off the bus, or a runtime told to use fewer: TPU_VISIBLE_CHIPS).
    When the expected count is unknown (no accelerator type: a GPU or CPU stand-in), the count is reported with
    confidence unknown."""

    id = "chips-enumerate"
    title = "Every chip enumerates"
    docs = "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm"
    examples = (DiagExample("8 of 8", example_input(8, expected_chips=8), Status.PASS),
                DiagExample("7 of 8", example_input(7, expected_chips=8), Status.FAIL),
                DiagExample("no accelerator type", example_input(8), Status.PASS))

    def applies(self, subject: DiagInput) -> bool:
        return bool(subject.inventory.devices)

    def evaluate(self, subject: DiagInput) -> Finding:
        seen, expected = len(subject.inventory.devices), subject.expected_chips
        if expected is None:
            return self.judged(Status.PASS, Severity.INFO, f"{seen} device(s); the expected count is unknown",
                               evidence={"devices": seen, "confidence": "unknown",
                                         "confidence_why": "no accelerator type says how many chips a host has "
                                                           "(give --expect-chips N)"}, host=subject.host)
        if seen == expected:
            return self.judged(Status.PASS, Severity.INFO, f"{seen} of {expected} chip(s)",
                               evidence={"devices": seen, "expected": expected, "confidence": "high"},
                               host=subject.host)
        return self.judged(Status.FAIL, Severity.CRITICAL, f"{seen} of {expected} chip(s) enumerate",
                           evidence={"devices": seen, "expected": expected, "confidence": "high"}, host=subject.host,
                           remediation=Remediation(text="REPLACE-HOST if no setting hides the chips: check "
                                                        "TPU_VISIBLE_CHIPS / TPU_PROCESS_BOUNDS, then the PCI bus.",
                                                   commands=("env | grep -i TPU_", "lspci -d 1ae0:",
                                                             "ls -l /dev/accel* /dev/vfio")))
