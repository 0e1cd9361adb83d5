from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_QR = "projects/p/locations/us-central2-b/queuedResources/my-qr"

_WAITING = {"CREATING", "ACCEPTED", "PROVISIONING", "WAITING_FOR_RESOURCES"}
_BROKEN = {"FAILED", "SUSPENDING", "SUSPENDED", "DELETING"}


def _describe(name: str, verb: str = "describe", *extra: str) -> str:
    parts = name.split("/")
    project, zone, qr = parts[1], parts[3], parts[5]
    return " ".join(["gcloud compute tpus queued-resources", verb, qr, "--zone", zone, "--project", project, *extra])


class QueuedResourceActive(Check):
    """When the node was created through a queued resource, that request is ACTIVE (not FAILED,
    SUSPENDED or still waiting for capacity)."""

    id = "NODE-007"
    title = "Queued resource is ACTIVE"
    step = Step.NODE
    facts = ("tpu.queued_resource",)
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/queued-resources"
    examples = (
        Example("active", {"tpu.queued_resource": {"name": _QR, "state": "ACTIVE"}}, Status.PASS),
        Example("failed", {"tpu.queued_resource": {"name": _QR, "state": "FAILED",
                                                   "failed_error": "out of capacity"}}, Status.FAIL),
        Example("waiting", {"tpu.queued_resource": {"name": _QR, "state": "WAITING_FOR_RESOURCES"}}, Status.WARN),
        Example("none", {"tpu.queued_resource": None}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        qr = facts.require("tpu.queued_resource")
        if not qr:
            return self.skip("the node was not created through a queued resource")
        name = qr["name"]
        if qr.get("failure"):
            return self.error(f"could not read queued resource {name}: {qr['failure']['message']}",
                              evidence={"failure": qr["failure"]})
        state = qr.get("state") or "STATE_UNSPECIFIED"
        evidence = {"name": name, "state": state, "state_initiator": qr.get("state_initiator"),
                    "failed_error": qr.get("failed_error")}
        short = name.rsplit("/", 1)[-1]
        if state == "ACTIVE":
            return self.passed(f"queued resource {short} is ACTIVE", evidence=evidence)
        if state in _WAITING:
            return self.warn(f"queued resource {short} is {state}: the slice is not provisioned yet",
                             evidence=evidence,
                             remediation=remediation("Wait for capacity; the request stays queued until its "
                                                     "valid-until time.", _describe(name)))
        if state in _BROKEN:
            detail = f": {qr['failed_error']}" if qr.get("failed_error") else ""
            by = f" (by {qr['state_initiator']})" if qr.get("state_initiator") not in (None, "STATE_INITIATOR_UNSPECIFIED") else ""
            return self.fail(f"queued resource {short} is {state}{by}{detail}", evidence=evidence,
                             remediation=remediation("Delete the queued resource and request it again "
                                                     "(another zone or a reservation if capacity is short).",
                                                     _describe(name), _describe(name, "delete", "--force")))
        return self.warn(f"queued resource {short} is in state {state}", evidence=evidence,
                         remediation=remediation("Describe it and act on its state.", _describe(name)))
