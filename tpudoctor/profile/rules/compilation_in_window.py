"""Compilation (not repeated) inside the capture window: the capture is not steady state."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.profile.host_result import CompileFigures, HostResult
from tpudoctor.profile.rule import Example, ProfileRule
from tpudoctor.profile.rules.recompilation import (
    compile_evidence,
    compile_severity,
    compile_summary,
)


def _host(counts: dict[str, int], share: float) -> HostResult:
    functions = [{"function": f, "framework": "jax", "compile_count": n, "compile_ms": 100.0,
                  "share_of_capture_percent": share} for f, n in counts.items()]
    return HostResult("h", compile=CompileFigures(sum(counts.values()), 100.0 * len(counts), share,
                                                  functions=functions))


class CompilationInWindow(ProfileRule):
    """Functions compiled once inside the capture window: the trace started before the warm-up
    ended, so it does not show steady state (recompilation is its own rule)."""

    id = "compilation-in-window"
    needs = ('compile-events', 'window')
    confidence_from = ('compile-events', 'window')  # its severity: a share of the capture window
    title = "No compilation inside the capture window"
    bottleneck = "compile-bound"
    scores_verdict = True
    lead_rank = 20
    COMPILE_FINDING_PERCENT = 5.0
    docs = "https://jax.readthedocs.io/en/latest/profiling.html"
    examples = (
        Example("warmed up", _host({}, 0.0), Status.PASS),
        Example("first compile in the window", _host({"train_step": 1}, 8.0), Status.WARN),
        Example("compile dominates the window", _host({"train_step": 1}, 70.0), Status.FAIL),
        Example("recompiling is the other rule", _host({"train_step": 4}, 30.0), Status.PASS),
    )

    def evaluate(self, host: HostResult):
        evidence = compile_evidence(host)
        c = host.compile
        if not c.compile_count or c.repeated:
            return self.passed("no one-off compilation in the window" if not c.compile_count
                               else "compilations are repeated: see recompilation", evidence=evidence)
        return self.fired(
            compile_severity(host, False, self.COMPILE_FINDING_PERCENT),
            f"{c.compile_count} compilation(s) inside the capture window", compile_summary(host),
            evidence=evidence,
            fixes=("Warm up (run one step) before starting the trace so the capture shows steady state",))
