from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.cloud_knowledge.iam import ROLE_FOR_PERMISSION
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import CheckResult, Severity, Status, Step

ACCESS_FACTS = ("logs.cloud_access", "logs.monitoring_access")
DEFAULT_PERMISSION = {"Cloud Logging": "logging.logEntries.list", "Cloud Monitoring": "monitoring.timeSeries.list"}


def _denied(service: str, member: str | None = "serviceAccount:trainer@my-project.iam.gserviceaccount.com") -> dict:
    permission = DEFAULT_PERMISSION[service]
    return {"service": service, "readable": False, "project": "my-project", "iam_member": member,
            "failure": {"kind": "permission_denied", "message": f"Permission '{permission}' denied",
                        "http_status": 403, "permission": permission, "attempts": 1,
                        "role": ROLE_FOR_PERMISSION[permission]}}


class CloudReadAccess(Check):
    """The identity tpudoctor runs as may read the node's Cloud Logging entries and Cloud Monitoring metrics.

    Without roles/logging.viewer and roles/monitoring.viewer the log and duty-cycle checks
    cannot look, which says nothing about the job: this names the missing role and the grant.
    """

    id = "LOGS-005"
    title = "Cloud Logging and Cloud Monitoring can be read"
    step = Step.LOGS
    facts = ACCESS_FACTS
    severity = Severity.HIGH
    docs = "https://cloud.google.com/logging/docs/access-control"
    examples = (
        Example("both readable", {"logs.cloud_access": {"service": "Cloud Logging", "readable": True},
                                  "logs.monitoring_access": {"service": "Cloud Monitoring", "readable": True}},
                Status.PASS),
        Example("logging denied", {"logs.cloud_access": _denied("Cloud Logging"),
                                   "logs.monitoring_access": {"service": "Cloud Monitoring", "readable": True}},
                Status.FAIL),
        Example("monitoring denied, identity unknown", {
            "logs.cloud_access": Unavailable("no TPU node"),
            "logs.monitoring_access": _denied("Cloud Monitoring", member=None)}, Status.FAIL),
        Example("nothing to read", {"logs.cloud_access": Unavailable("no TPU node to read Cloud Logging for"),
                                    "logs.monitoring_access": Unavailable("no TPU node")}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        known = [value for value in (facts.value(key) for key in ACCESS_FACTS) if isinstance(value, dict)]
        if not known:
            for key in ACCESS_FACTS:
                facts.require(key)  # SKIP (or ERROR) with the provider's own reason
        denied = [value for value in known if not value.get("readable")]
        if not denied:
            return self.passed(f"{' and '.join(v['service'] for v in known)} answered",
                               evidence={"readable": [v["service"] for v in known]})
        parts, commands, evidence = [], [], {}
        for value in denied:
            failure = value.get("failure") or {}
            permission = failure.get("permission") or DEFAULT_PERMISSION.get(value["service"], "")
            role = failure.get("role") or ROLE_FOR_PERMISSION.get(permission, "roles/viewer")
            who = (value.get("iam_member") or "the caller").split(":", 1)[-1]
            parts.append(f"{value['service']}: {who} lacks {permission} (granted by {role})")
            commands.append(gcloud.project_role_binding(value.get("project"), value.get("iam_member"), role))
            evidence[value["service"]] = {"permission": permission, "role": role, "member": value.get("iam_member"),
                                          "http_status": failure.get("http_status"), "message": failure.get("message")}
        roles = " and ".join(e["role"] for e in evidence.values())
        project = denied[0].get("project") or "PROJECT"
        return self.fail(
            "permission denied reading " + "; ".join(parts),
            evidence=evidence, severity=Severity.HIGH,
            remediation=remediation(f"Grant {roles} on project {project} to the identity tpudoctor runs as.",
                                    *commands),
        )
