"""From a prepared document to its output in one format, for every command's report.

A command prepares its document once (``tpudoctor.documents``: scrubbed, redacted, validated), then asks
``render(document, fmt)``. A kind with a view (``VIEWS``) is ``EMITTERS[fmt](VIEWS[kind](document))``, and its
JSON is the prepared document itself. Options (``verbose``, ``color``; ``gate``, the run's
``tpudoctor.findings.Gate``, for JUnit) go to the emitter that takes them.
Views and emitters are imported only when used, so ``--help`` loads none of them.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.profile.compare_report import GOODPUT_COMPARE, PROFILE_COMPARE, PROFILE_HISTORY

VIEWS: dict[str, str] = {
    "bench": "tpudoctor.reports.views.bench:view",
    "check": "tpudoctor.reports.views.check:view",
    "goodput": "tpudoctor.reports.views.goodput:view",
    "diag": "tpudoctor.reports.views.diag:view",
    "hang": "tpudoctor.reports.views.hang:view",
    "merged": "tpudoctor.reports.views.merged:view",
    "memory": "tpudoctor.reports.views.memory:view",
    "pipeline_whatif": "tpudoctor.reports.views.profile:whatif_view",
    "profile": "tpudoctor.reports.views.profile:view",
    "memory-preflight": "tpudoctor.reports.views.memory:preflight_view",
    **{kind: "tpudoctor.reports.views.compare:view" for kind in (PROFILE_COMPARE, PROFILE_HISTORY, GOODPUT_COMPARE)},
}
"""Report kind -> ``module:function`` that makes its ``reports.view.View`` from the prepared document."""

EMITTERS: dict[str, str] = {
    "text": "tpudoctor.reports.emit_text:emit",
    "markdown": "tpudoctor.reports.emit_markdown:emit",
    "html": "tpudoctor.reports.emit_html:emit",
    "junit": "tpudoctor.reports.emit_junit:emit",
}
"""Format -> ``module:function`` that draws a view; JSON is the prepared document (``render_json``)."""


def view_kind(document: dict[str, Any]) -> str:
    """The document's ``kind``; ``merged`` for a check report merged across workers (it holds their reports)."""
    kind = str(document.get("kind") or "")
    return "merged" if kind == "check" and "workers" in document else kind


def render_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, default=str) + "\n"


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def render(document: dict[str, Any], fmt: str, **options: Any) -> str:
    """``document`` (a prepared report document, its ``kind`` set) in ``fmt``."""
    kind = view_kind(document)
    if kind == "answer":  # a listing or an explanation (``tpudoctor.answer``): its product wrote both forms
        return render_json(document["data"]) if fmt == "json" else document["text"]
    if kind not in VIEWS:
        raise TpudoctorError(f"no view for a {kind or 'kind-less'} document (kinds: {', '.join(sorted(VIEWS))})")
    if fmt == "json":
        return render_json(document)
    if fmt not in EMITTERS:
        raise TpudoctorError(f"no {fmt} emitter (formats: json, {', '.join(EMITTERS)})")
    emit = _load(EMITTERS[fmt])
    taken = inspect.signature(emit).parameters
    return emit(_load(VIEWS[kind])(document), **{k: v for k, v in options.items() if k in taken})
