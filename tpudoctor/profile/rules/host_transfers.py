"""Host/device transfers (H2D, D2H, DMA mapping, np.asarray) over the capture."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import HostOpsFigures, HostResult
from tpudoctor.profile.rule import Example, ProfileRule


def _host(transfer_ms: float) -> HostResult:
    return HostResult("h", window_ms=1000.0, host_ops=HostOpsFigures(
        host_transfer_ms=transfer_ms, table=[{"kind": "host-transfer", "name": "MemcpyDToH", "total_ms": transfer_ms}]))


class HostTransfers(ProfileRule):
    """Transfer events between host and device cover a large share of the capture window (flagged
    from 10 %)."""

    id = "host-transfers"
    needs = ('host-ops', 'window')
    title = "Host/device transfers are a small part of the capture"
    bottleneck = "host-bound"
    lead_rank = 40
    HOST_TRANSFER_PERCENT = 10.0
    docs = "https://jax.readthedocs.io/en/latest/faq.html#controlling-data-and-computation-placement-on-devices"
    examples = (
        Example("few transfers", _host(10.0), Status.PASS),
        Example("many transfers", _host(300.0), Status.WARN),
    )

    def evaluate(self, host: HostResult):
        ho = host.host_ops
        pct = 100 * ho.host_transfer_ms / max(host.window_ms, 1e-9)
        evidence = {"host_transfer_ms": round(ho.host_transfer_ms, 3), "share_of_capture_percent": round(pct, 2),
                    "transfers": ho.rows("host-transfer")[:8]}
        if pct < self.HOST_TRANSFER_PERCENT:
            return self.passed(f"transfers run {pct:.1f}% of the capture", evidence=evidence)
        return self.fired(
            Severity.MEDIUM, f"Host/device transfers run {pct:.1f}% of the capture",
            f"Transfer events (H2D/D2H, DMA mapping, np.asarray) cover {ho.host_transfer_ms / 1e3:.2f} s.",
            evidence=evidence,
            fixes=("Fetch results to the host less often (every N steps), and asynchronously (copy_to_host_async)",
                   "Keep data on the device between steps; donate buffers (donate_argnums) to avoid copies"))
