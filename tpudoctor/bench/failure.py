"""Why a reference run failed: its output classified through the step 4 log catalog."""

from __future__ import annotations

from typing import Any


def diagnose_output(text: str, source: str = "reference run") -> list[Any]:
    """``tpudoctor.logdiag`` diagnoses of the run's output, root cause first; [] when nothing matches."""
    if not text:
        return []
    try:
        from tpudoctor.logdiag import diagnose_text
    except ImportError:  # the catalog ships with step 4; without it the raw error still shows
        return []
    return list(diagnose_text(text, source=source))


def diagnosis_to_dict(diagnosis: Any) -> dict[str, Any]:
    remediation = getattr(diagnosis, "remediation", None)
    return {
        "signature_id": diagnosis.signature_id,
        "title": diagnosis.title,
        "cause": diagnosis.cause,
        "status": getattr(diagnosis.status, "value", str(diagnosis.status)),
        "evidence": dict(getattr(diagnosis, "evidence", {}) or {}),
        "count": getattr(diagnosis, "count", 1),
        "first_line_no": getattr(diagnosis, "first_line_no", None),
        "remediation": remediation.to_dict() if remediation is not None else None,
    }
