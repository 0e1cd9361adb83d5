"""Why a reference run failed: its output classified through the step 4 log catalog."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding


def diagnose_output(text: str, source: str = "reference run") -> list[Finding]:
    """``tpudoctor.logdiag`` findings of the run's output, root cause first; [] when nothing matches."""
    if not text:
        return []
    try:
        from tpudoctor.logdiag import diagnose_text
    except ImportError:  # the catalog ships with step 4; without it the raw error still shows
        return []
    return list(diagnose_text(text, source=source))


def diagnosis_to_dict(finding: Finding) -> dict[str, Any]:
    """A log finding in brief, for a reference result's evidence (the log excerpt stays out)."""
    from tpudoctor.logdiag import cause_of, pulled_evidence

    return {
        "signature_id": finding.id,
        "title": finding.title,
        "cause": cause_of(finding),
        "status": finding.status.value,
        "evidence": pulled_evidence(finding),
        "count": finding.evidence.get("count", 1),
        "first_line_no": finding.evidence.get("first_line_no"),
        "remediation": finding.remediation.to_dict() if finding.remediation is not None else None,
    }
