from __future__ import annotations

from tpudoctor.check import Check, Example, remediation
from tpudoctor.cloud_knowledge import gcloud
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Severity, Status, Step

_BAD = ("unreachable", "refused", "hung", "error")


def _workers(*statuses: str) -> dict:
    return {"node": "my-tpu", "zone": "us-central2-b", "project": "p", "from_worker": 0, "port": 22,
            "probe_timeout_s": 2.0, "elapsed_s": 0.1,
            "workers": [{"worker": i, "ip": f"10.130.0.{i + 2}", "status": s, "connect_ms": 1.0, "banner_ms": 3.0,
                         "detail": ""} for i, s in enumerate(statuses)]}


def _names(rows: list[dict], limit: int = 8) -> str:
    shown = ", ".join(f"{r['worker']} ({r['ip']})" for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


class WorkersReachable(Check):
    """Every worker of a multi-host node answers from this worker: a TCP connect and the SSH banner
    on each worker's internal IP, probed in parallel with a per-probe timeout. A multi-host job
    waits for every worker, so one dead or unreachable worker stalls the whole slice."""

    id = "NODE-009"
    title = "Every worker of a multi-host node is reachable"
    step = Step.NODE
    requires = ("NODE-001",)
    facts = ("tpu.workers_reachability",)
    severity = Severity.HIGH
    timeout_s = 5.0
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshoot-multislice"
    examples = (
        Example("all 4 answer", {"tpu.workers_reachability": _workers("ok", "ok", "ok", "ok")}, Status.PASS),
        Example("worker 2 unreachable", {"tpu.workers_reachability": _workers("ok", "ok", "unreachable", "ok")},
                Status.FAIL),
        Example("worker 1 slow", {"tpu.workers_reachability": _workers("ok", "slow", "ok", "ok")}, Status.WARN),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        data = facts.require("tpu.workers_reachability")
        rows = data["workers"]
        by_status: dict[str, list[dict]] = {}
        for row in rows:
            by_status.setdefault(row["status"], []).append(row)
        bad = [r for r in rows if r["status"] in _BAD]
        slow = by_status.get("slow", [])
        evidence = {"workers": len(rows), "from_worker": data.get("from_worker"), "port": data["port"],
                    "probe_timeout_s": data["probe_timeout_s"], "probe_elapsed_s": data["elapsed_s"],
                    "counts": {k: len(v) for k, v in sorted(by_status.items())},
                    "bad_workers": [{k: r[k] for k in ("worker", "ip", "status", "detail")} for r in bad],
                    "slow_workers": [{k: r[k] for k in ("worker", "ip", "banner_ms")} for r in slow]}
        name, zone, project = data.get("node"), data.get("zone"), data.get("project")
        if bad:
            everyone = len(bad) == len(rows) - (1 if data.get("from_worker") is not None else 0) and len(bad) > 1
            why = "; ".join(sorted({f"{r['status']}: {r['detail']}" for r in bad[:3]}))
            if everyone:
                todo = ("No other worker answers: the network between workers is blocked. Allow all internal "
                        "traffic between the node's workers (a firewall rule on its VPC network), then rerun.")
                commands = ["gcloud compute firewall-rules list --filter='direction=INGRESS' "
                            f"--project {project or 'PROJECT'}"]
            else:
                todo = ("These workers are down or wedged; the job cannot start or will hang at its first "
                        "collective until every worker is back. Log in to each (or restart the node).")
                commands = [gcloud.tpu_vm("ssh", name, zone, project, f"--worker={r['worker']}",
                                          "--command='uptime; sudo systemctl status sshd --no-pager'")
                            for r in bad[:4]]
                commands.append(gcloud.tpu_vm("stop", name, zone, project))
                commands.append(gcloud.tpu_vm("start", name, zone, project))
            return self.fail(f"{len(bad)} of {len(rows)} workers did not answer on port {data['port']}: "
                             f"{_names(bad)} ({why})", evidence=evidence, remediation=remediation(todo, *commands))
        if slow:
            return self.warn(
                f"{len(slow)} of {len(rows)} workers answered slowly: {_names(slow)}", evidence=evidence,
                severity=Severity.MEDIUM,
                remediation=remediation(
                    "A worker that takes over half a second to answer a connection is overloaded (CPU, memory, a "
                    "swapping input pipeline) and will slow every collective; look at it.",
                    *(gcloud.tpu_vm("ssh", name, zone, project, f"--worker={r['worker']}", "--command='top -bn1 | head -20'")
                      for r in slow[:3])))
        return self.passed(f"all {len(rows)} workers answered in {data['elapsed_s']:.2f}s "
                           f"(probed in parallel, {data['probe_timeout_s']:g}s limit each)", evidence=evidence)
