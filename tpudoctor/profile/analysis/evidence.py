"""Is there enough in a host's capture to judge it? The named minimum evidence, and the verdict's fallback.

A verdict about where step time goes needs several steps, steps that cover a fair part of the
captured window (else the window is mostly something else: idle host, set-up), and, to call the
device the bottleneck, some device time. Below that the honest verdict is ``unknown``, with the
reason and how to capture better, as xprof says "cannot tell" for a capture without steps.
"""

from __future__ import annotations

import dataclasses

from tpudoctor.profile.host_result import Evidence

# The named minimum evidence. MIN_STEPS: a median of fewer steps is one outlier away from wrong
# (the kernel benchmark that motivated this has 3). MIN_STEP_COVERAGE_PERCENT: the steps must span
# at least this share of the capture window. MIN_DEVICE_TIME_MS: device op time needed before the
# device can be called the bottleneck.
MIN_STEPS = 5
MIN_STEP_COVERAGE_PERCENT = 20.0
MIN_DEVICE_TIME_MS = 10.0
# Strong evidence, what a HIGH finding needs (``tpudoctor.profile.confidence``): real step markers
# (not steps guessed from program runs), at least MIN_STEPS of them, spanning at least
# STRONG_STEP_COVERAGE_PERCENT of the window (the steps are most of what the capture shows).
STRONG_STEP_COVERAGE_PERCENT = 50.0

STEP_MARKER_FIXES = (
    "JAX: wrap each step in `with jax.profiler.StepTraceAnnotation('train', step_num=i):`",
    "TensorFlow: `with tf.profiler.experimental.Trace('train', step_num=i, _r=1):`, or use Keras fit",
)


@dataclasses.dataclass(frozen=True)
class MinimumEvidence:
    steps: int = MIN_STEPS
    step_coverage_percent: float = MIN_STEP_COVERAGE_PERCENT
    device_time_ms: float = MIN_DEVICE_TIME_MS


@dataclasses.dataclass(frozen=True)
class EvidenceCheck:
    enough: bool
    reasons: tuple[str, ...]
    """One sentence per missing piece of evidence, with the figures."""
    fixes: tuple[str, ...]
    """What to do for a capture that can be judged."""
    evidence: Evidence
    minimum: MinimumEvidence

    @property
    def reason(self) -> str:
        return " ".join(self.reasons)

    def to_dict(self) -> dict:
        return {
            "enough": self.enough, "reasons": list(self.reasons), "fixes": list(self.fixes),
            "evidence": {**dataclasses.asdict(self.evidence),
                         "step_coverage_percent": round(self.evidence.step_coverage_percent, 3)},
            "minimum": dataclasses.asdict(self.minimum),
        }


def evidence_of(analysis) -> Evidence:
    """The evidence of a host analysis (``tpudoctor.profile.analysis.HostAnalysis``); a ``HostResult``
    or a ``ProfileReport`` (its primary host) gives the evidence the map measured."""
    if hasattr(analysis, "primary"):
        analysis = analysis.primary
    if isinstance(getattr(analysis, "evidence", None), Evidence):
        return analysis.evidence
    steps = analysis.steps
    frame = steps.steps
    span_ms = float(frame["end_ps"].max() - frame["start_ps"].min()) / 1e9 if not frame.empty else 0.0
    per_core = analysis.device.per_core
    device_ms = float(per_core["busy_ms"].sum()) if not per_core.empty else 0.0
    markers = steps.method in ("device-steps-line", "host-step-annotations")
    return Evidence(steps=int(steps.count), step_span_ms=span_ms, window_ms=float(analysis.window_ms),
                    device_time_ms=device_ms, has_step_markers=markers)


def evidence_from_dict(data: dict) -> Evidence:
    """An ``Evidence`` back from ``EvidenceCheck.to_dict()['evidence']``."""
    return Evidence(steps=int(data["steps"]), step_span_ms=float(data["step_span_ms"]),
                    window_ms=float(data["window_ms"]), device_time_ms=float(data["device_time_ms"]),
                    has_step_markers=bool(data["has_step_markers"]))


def check_evidence(evidence: Evidence, *, verdict: str | None = None,
                   minimum: MinimumEvidence = MinimumEvidence()) -> EvidenceCheck:
    """Whether ``evidence`` suffices for ``verdict``, and if not why and the fix.

    Steps are needed for every verdict; step coverage for all but "compile-bound" (compile time is
    a share of the window itself); device time only for "device-bound" (input- or host-bound jobs
    can have almost no device time, and that is their finding)."""
    reasons: list[str] = []
    fixes: list[str] = []
    capture_longer = (f"Capture longer: trace at least {minimum.steps} steps of the steady-state loop (e.g. "
                      "jax.profiler.trace / tf.profiler.experimental.start around 10+ steps after warm-up)")
    if evidence.steps < minimum.steps:
        reasons.append(f"The capture has {evidence.steps} step(s); at least {minimum.steps} are needed to judge "
                       "where step time goes.")
        fixes.append(capture_longer)
        if not evidence.has_step_markers:
            fixes.extend(STEP_MARKER_FIXES)
    # Compilation is measured against the window itself: a window that is mostly compiling is the finding.
    if evidence.steps and verdict != "compile-bound" and evidence.step_coverage_percent < minimum.step_coverage_percent:
        reasons.append(f"The steps span {evidence.step_span_ms:.3g} ms of the {evidence.window_ms:.3g} ms window "
                       f"({evidence.step_coverage_percent:.2g}%); at least {minimum.step_coverage_percent:.0f}% "
                       "is needed, else the window shows mostly something other than the steps.")
        fixes.append("Start the trace right before the steps and stop it right after them")
        if not evidence.has_step_markers:
            fixes.extend(f for f in STEP_MARKER_FIXES if f not in fixes)
    if verdict == "device-bound" and evidence.device_time_ms < minimum.device_time_ms:
        reasons.append(f"The device ran ops for {evidence.device_time_ms:.3g} ms; at least "
                       f"{minimum.device_time_ms:g} ms are needed to call the device the bottleneck.")
        if capture_longer not in fixes:
            fixes.append(capture_longer)
    return EvidenceCheck(enough=not reasons, reasons=tuple(reasons), fixes=tuple(dict.fromkeys(fixes)),
                         evidence=evidence, minimum=minimum)
