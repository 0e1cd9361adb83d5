"""What to do about a chip that failed a health test: rerun to confirm, then RESTART elsewhere or REPLACE-HOST,
with the ready ``gcloud`` command to report the host as faulty where its prerequisites hold (a TPU VM whose name
and zone are known; the report is for All Capacity mode and takes the host away for 3-14 days, so only after a
repeated result)."""

from __future__ import annotations

from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.diag.rule import DiagInput
from tpudoctor.findings import Remediation

DOCS = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshoot-tpu-vm"


def chip_fault(subject: DiagInput, chips: list[str], what: str, behavior: str) -> Remediation:
    rerun = f"tpudoctor diag -r {max(subject.level, 2)}"
    names = ", ".join(chips)
    if subject.faults:
        injected = {subject.chip(f.device) for f in subject.faults}
        said = "; ".join(f.describe() for f in subject.faults)
        if set(chips) <= injected:
            return Remediation(text=f"This run injected faults ({said}): the finding shows the detector works; "
                                    "nothing to report.", commands=(rerun,))
        return Remediation(text=f"This run injected faults ({said}), but {', '.join(sorted(set(chips) - injected))} "
                                "had none injected: rerun without --inject before judging that chip.",
                           commands=(rerun,))
    if subject.inventory.backend != "tpu":
        return Remediation(text=f"REPLACE-HOST if it repeats: {what} on {names}. Rerun to confirm; if the same device "
                                "fails again, move the job off this machine and report it to its provider.",
                           commands=(rerun,), docs_url=DOCS)
    node = subject.node
    command = gcloud.report_host_as_faulty(node.get("tpu"), node.get("zone"), node.get("project"),
                                           f"tpudoctor diag: {what} on {names}", behavior=behavior)
    return Remediation(text=f"REPLACE-HOST: {what} on {names}. Rerun once to confirm (a repeated outlier on the same "
                            "chip rules out software); then move the job to other VMs and, in All Capacity mode, "
                            "report the host as faulty (repair takes 3-14 days).", commands=(rerun, command),
                       docs_url=DOCS)
