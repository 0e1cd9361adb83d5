"""One table from (document kind, format) to the renderer that formats it, for every command's report.

A command prepares its document once (``tpudoctor.documents``: scrubbed, redacted, validated), then asks
``render(document, fmt)``; the table says which renderer formats that kind in that format and which options it
takes (``verbose``, ``color``; ``gate``, the run's ``tpudoctor.findings.Gate``, for JUnit). Renderers are imported only when used, so ``--help`` loads none of them.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from tpudoctor.errors import TpudoctorError
from tpudoctor.profile.compare_report import GOODPUT_COMPARE, PROFILE_COMPARE, PROFILE_HISTORY


@dataclasses.dataclass(frozen=True)
class Renderer:
    target: str
    """``module:function``."""
    options: tuple[str, ...] = ()
    """The keyword options it takes; others given to ``render`` are not its business."""
    takes_format: bool = False
    """One function renders several formats: it is given the format as its second argument."""
    reads_back: str | None = None
    """``module:callable`` that turns the document into the object the renderer formats (a report read back)."""


_HANG_BACK = "tpudoctor.hang.report:HangReport.from_dict"

RENDERERS: dict[tuple[str, str], Renderer] = {
    ("profile", "text"): Renderer("tpudoctor.reports.profile_text:render_document", ("color",)),
    ("profile", "json"): Renderer("tpudoctor.reports.profile_json:render_document"),
    ("profile", "markdown"): Renderer("tpudoctor.reports.profile_markdown:render_document"),
    ("profile", "html"): Renderer("tpudoctor.reports.profile_html:render_document"),
    ("goodput", "text"): Renderer("tpudoctor.reports.goodput_text:render", ("verbose",)),
    ("goodput", "json"): Renderer("tpudoctor.reports.goodput_json:render"),
    ("goodput", "markdown"): Renderer("tpudoctor.reports.goodput_markdown:render"),
    ("goodput", "html"): Renderer("tpudoctor.reports.goodput_html:render"),
    ("goodput", "junit"): Renderer("tpudoctor.reports.goodput_junit:render", ("gate",)),
    ("hang", "text"): Renderer("tpudoctor.reports.hang_text:render", ("verbose", "color"), reads_back=_HANG_BACK),
    ("hang", "json"): Renderer("tpudoctor.reports.hang_json:render_document"),
    ("hang", "markdown"): Renderer("tpudoctor.reports.hang_markdown:render", ("verbose",), reads_back=_HANG_BACK),
    ("hang", "html"): Renderer("tpudoctor.reports.hang_html:render", reads_back=_HANG_BACK),
    ("hang", "junit"): Renderer("tpudoctor.reports.hang_junit:render", ("gate",), reads_back=_HANG_BACK),
    ("diag", "text"): Renderer("tpudoctor.reports.diag_text:render", ("verbose",)),
    ("diag", "json"): Renderer("tpudoctor.reports.diag_json:render"),
    ("diag", "markdown"): Renderer("tpudoctor.reports.diag_markdown:render", ("verbose",)),
    ("diag", "html"): Renderer("tpudoctor.reports.diag_html:render"),
    ("diag", "junit"): Renderer("tpudoctor.reports.diag_junit:render", ("gate",)),
    ("memory", "text"): Renderer("tpudoctor.reports.memory_text:render", ("verbose",)),
    ("memory", "json"): Renderer("tpudoctor.reports.memory_json:render"),
    ("memory", "markdown"): Renderer("tpudoctor.reports.memory_markdown:render", ("verbose",)),
    ("memory", "html"): Renderer("tpudoctor.reports.memory_html:render"),
    ("memory", "junit"): Renderer("tpudoctor.reports.memory_junit:render", ("gate",)),
    ("bench", "text"): Renderer("tpudoctor.reports.bench_text:render"),
    ("bench", "json"): Renderer("tpudoctor.reports.bench_json:render"),
    ("bench", "markdown"): Renderer("tpudoctor.reports.bench_markdown:render"),
    ("bench", "junit"): Renderer("tpudoctor.reports.bench_junit:render", ("gate",)),
    **{(kind, fmt): Renderer("tpudoctor.reports.profile_compare:render", ("gate",), takes_format=True)
       for kind in (PROFILE_COMPARE, PROFILE_HISTORY) for fmt in ("text", "json", "markdown", "html", "junit")},
    **{(GOODPUT_COMPARE, fmt): Renderer("tpudoctor.reports.goodput_compare:render", ("gate",), takes_format=True)
       for fmt in ("text", "json", "markdown", "html", "junit")},
    **{("pipeline_whatif", fmt): Renderer("tpudoctor.reports.pipeline_whatif:render", takes_format=True)
       for fmt in ("text", "json", "markdown", "html")},
}


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def render(document: dict[str, Any], fmt: str, **options: Any) -> str:
    """``document`` (a prepared report document, its ``kind`` set) in ``fmt``."""
    kind = str(document.get("kind") or "")
    renderer = RENDERERS.get((kind, fmt))
    if renderer is None:
        raise TpudoctorError(f"no {fmt} renderer for a {kind or 'kind-less'} document")
    subject = _load(renderer.reads_back)(document) if renderer.reads_back else document
    given = {k: v for k, v in options.items() if k in renderer.options}
    function = _load(renderer.target)
    return function(subject, fmt, **given) if renderer.takes_format else function(subject, **given)
