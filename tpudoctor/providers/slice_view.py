"""The facts of a merged view: every worker's report (or why there is none), the workers the slice has, and
the node. The fan-out or the report store gathered them; this hands them to the slice checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider

NOT_MERGED = ("only a merged view has every worker's report: run tpudoctor merge on the workers' reports, "
              "or tpudoctor check --all-workers")


class SliceViewProvider(FactProvider):
    name = "slice_view"
    provides = ("slice.outcomes", "slice.expected_workers", "slice.target")
    timeout_s = 5.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        view = ctx.slice
        if view is None:
            return {key: Unavailable(NOT_MERGED) for key in self.provides}
        return {"slice.outcomes": view.outcomes, "slice.expected_workers": list(view.expected),
                "slice.target": view.target}
