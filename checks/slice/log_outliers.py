from __future__ import annotations

from typing import Any

from tpudoctor.check import Example
from tpudoctor.checks.slice._base import OUTCOMES, _SliceCheck
from tpudoctor.checks.slice._examples import fanned_out, logs_read, logs_templated, worker_report
from tpudoctor.facts import Facts
from tpudoctor.findings import CheckResult, Finding, Remediation, Scope, Severity, Status, Step
from tpudoctor.pod.worker_ids import describe_workers

_STEP = ("<TIME> INFO trainer.py:<NUM>] step <NUM> loss=<NUM>", 400, False)
_SAVE = ("<TIME> INFO checkpoint.py:<NUM>] saved checkpoint to <*>", 4, False)
_OOM = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Error allocating device buffer", 1, True)
QUOTED = 3
"""How many of an outlier worker's own templates the message and evidence quote."""
MANY_OWN = 3
"""Without an error among them, a worker stands out with at least this many templates of its own, and at least
this many times the median of the workers' own templates (every worker prints a few lines of its own)."""


class LogOutliers(_SliceCheck):
    """Which worker's log has lines its peers' logs lack: templates (times, numbers, ids masked) in one worker's
    log and in no other's, an error or failure line first, from the template summaries ``check --worker N
    --log-file`` writes into each worker's report."""

    id = "POD-008"
    title = "A worker whose log has lines the others lack"
    step = Step.LOGS
    severity = Severity.HIGH
    docs = "https://cloud.google.com/tpu/docs/troubleshooting/troubleshooting"
    examples = (
        Example("every worker printed the same lines", fanned_out(
            *(worker_report(w, results=(logs_templated(_STEP, _SAVE),)) for w in "012")), Status.PASS),
        Example("worker 2 alone printed an out-of-memory error", fanned_out(
            worker_report("0", results=(logs_templated(_STEP, _SAVE),)),
            worker_report("1", results=(logs_templated(_STEP, _SAVE),)),
            worker_report("2", results=(logs_templated(_OOM, _STEP),))), Status.WARN),
        Example("reports without template summaries (no --worker, or older tpudoctor)", fanned_out(
            worker_report("0", results=(logs_read(),)), worker_report("1", results=(logs_read(),))), Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        outcomes: dict[str, Any] = facts.require(OUTCOMES)
        summaries = {w: s for w, o in outcomes.items() if o.report is not None
                     and (s := _summary(o.report.results)) is not None}
        base = dict(id=self.id, step=self.step, title=self.title)
        if len(summaries) < 2:
            reason = (f"{len(summaries)} worker report(s) carry a log template summary; comparing needs 2 or more "
                      "(run check --worker N --log-file FILE on each worker, with this tpudoctor)")
            return Finding(**base, status=Status.SKIP, message=reason, skip_reason=reason, severity=Severity.INFO)
        own = _own_templates(summaries)
        outliers = _outliers(own, len(summaries))
        compared = len(summaries)
        if not outliers:
            with_own = sorted(w for w, t in own.items() if t)
            return Finding(**base, status=Status.PASS, severity=Severity.INFO, message=(
                f"the {compared} workers' logs share their templates"
                + (f" (a few lines of their own on {describe_workers(with_own)}, no error among them)"
                   if with_own else "")))
        quoted = {w: [{"template": t, "count": n, "error": e} for t, n, e in own[w][:QUOTED]] for w in outliers}
        first = outliers[0]
        top_t, top_n, _ = own[first][0]
        message = (f"worker {first}'s log has {len(own[first])} template(s) none of the other {compared - 1} "
                   f"worker(s) has, first: '{top_t}' ({top_n}x)")
        if len(outliers) > 1:
            message += f"; also {describe_workers(outliers[1:])}"
        if compared == 2:
            message += " (only 2 workers compared: which one is odd is read from the error line alone)"
        return Finding(
            **base, status=Status.WARN, severity=self.severity, message=message,
            scope=Scope.of(workers=outliers),
            evidence={"outlier_workers": outliers, "workers_compared": compared, "own_templates": quoted},
            remediation=Remediation(text=f"Read worker {first}'s log around these lines first: the other workers "
                                         "did not print them."))


def _summary(results) -> list[tuple[str, int, bool]] | None:
    for result in results:
        summary = result.evidence.get("log_templates") if result.id.startswith("LOGS-") else None
        if isinstance(summary, dict) and isinstance(summary.get("top"), list):
            return [(str(t.get("template", "")), int(t.get("count", 0) or 0), bool(t.get("error")))
                    for t in summary["top"] if isinstance(t, dict) and t.get("template")]
    return None


def _own_templates(summaries: dict[str, list[tuple[str, int, bool]]]) -> dict[str, list[tuple[str, int, bool]]]:
    """Per worker, the templates no other worker's summary has: an error line first (the exception before its
    traceback's header, which says less), then the most frequent."""
    seen: dict[str, int] = {}
    for templates in summaries.values():
        for template in {t for t, _n, _e in templates}:
            seen[template] = seen.get(template, 0) + 1
    return {w: sorted((x for x in templates if seen[x[0]] == 1), key=lambda x: (not x[2], x[0].startswith("Traceback"), -x[1], x[0]))
            for w, templates in summaries.items()}


def _outliers(own: dict[str, list[tuple[str, int, bool]]], compared: int) -> list[str]:
    """Workers with an error template of their own; else, of 3 or more, workers with many more own templates than
    the median worker. Ranked by errors, then how many."""
    erring = [w for w, t in own.items() if any(e for _t, _n, e in t)]
    if compared == 2 and len(erring) != 1:
        return []  # both or neither printed an error of its own: nothing says which is odd
    if not erring and compared >= 3:
        sizes = sorted(len(t) for t in own.values())
        median = sizes[len(sizes) // 2]
        erring = [w for w, t in own.items() if len(t) >= MANY_OWN and len(t) >= MANY_OWN * max(median, 1)]
    return sorted(erring, key=lambda w: (-sum(e for _t, _n, e in own[w]), -len(own[w]), w))
