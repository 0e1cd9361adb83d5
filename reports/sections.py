"""Sections: what a report shows beside its findings (a merged pod report's per-worker map).

The check renderers take ``sections`` and ask each one for its own format, at one place per format, so a
report with a section is still the one document the check renderers format: nothing edits a renderer's
finished output. A section says nothing in a format it does not override.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tpudoctor.findings import Finding


class Section:
    def text(self) -> str:
        """Plain lines before the report (a blank line follows)."""
        return ""

    def markdown(self) -> str:
        """Markdown blocks after the title (a blank line follows)."""
        return ""

    def html(self) -> str:
        """HTML elements after the title."""
        return ""

    def json(self) -> Mapping[str, Any]:
        """Top-level fields after the report's own."""
        return {}

    def junit(self, suites: ET.Element, suite: ET.Element, cases: Sequence[tuple[ET.Element, Finding]]) -> None:
        """Add to the JUnit tree before it is written: ``suite`` is the report's own, ``cases`` its testcases
        with the finding each one tells."""
