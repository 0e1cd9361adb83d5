"""matmul-peers: no chip's sustained matmul rate lags its peers'."""

from __future__ import annotations

from tpudoctor.diag.judging import PeerRateRule
from tpudoctor.diag.rule import Example, example_input, example_timings
from tpudoctor.findings import Status


class MatmulPeers(PeerRateRule):
    """The same matmul chain timed on every chip, repetition by repetition in shuffled order: a chip whose time
    over its peers' median stays above 1 + margin (5 %, or three times the spread of the chips) is slow: a FAIL
    naming it and by how much. Judged on the ratio in the same repetition, so a busy host slows every chip alike and flags
    none. A chip slower only within its own noise is a WARN to rerun; a run that is not clear-cut is
    measured a second time first (``second_look``). Fewer than three devices cannot be compared (unknown)."""

    id = "matmul-peers"
    title = "No chip's matmul rate lags its peers"
    measurement = "matmul"
    what = "sustained matmul rate"
    docs = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html"
    examples = (Example("even", example_input(8, matmul=example_timings([1.0] * 8)), Status.PASS),
                Example("chip 3 10% slow", example_input(8, matmul=example_timings([1.0] * 3 + [1.1] + [1.0] * 4)),
                            Status.FAIL),
                Example("two devices", example_input(2, matmul=example_timings([1.0, 1.1])), Status.PASS))
