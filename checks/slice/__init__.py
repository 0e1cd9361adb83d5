"""Slice checks: what only a merged view of every worker's report can tell (workers that did not answer or
report, versions or clocks that differ, which worker failed first). They run on ``tpudoctor merge`` and
``check --all-workers`` (``runs_on = "slice"``), never on one machine."""
