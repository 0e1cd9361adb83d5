"""hbm-peers: no chip's memory bandwidth lags its peers'."""

from __future__ import annotations

from tpudoctor.diag.judging import PeerRateRule
from tpudoctor.diag.rule import Example, example_input, example_timings
from tpudoctor.findings import Status


class HbmPeers(PeerRateRule):
    """Each chip reads and writes an array of at least 1 GiB (HBM on a TPU, far beyond any cache), timed like the
    matmul: a chip whose bandwidth stays below its peers' by more than its margin is a FAIL naming it; an unclear run is
    measured a second time while r2's budget allows (after the matmul's)."""

    id = "hbm-peers"
    title = "No chip's memory bandwidth lags its peers"
    measurement = "hbm"
    what = "memory bandwidth"
    docs = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html"
    examples = (Example("even", example_input(8, hbm=example_timings([0.5] * 8, unit="gbps", work=2**31)),
                            Status.PASS),
                Example("chip 0 15% slow", example_input(8, hbm=example_timings([0.575] + [0.5] * 7, unit="gbps",
                                                                                   work=2**31)), Status.FAIL))
