"""Functions compiled more than once inside the capture window."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, CompileFigures, HostResult
from tpudoctor.profile.rule import SHARE_OF_STEP, Example, ProfileRule

BOUND_PERCENT = 20.0


def recompile_fixes(framework: str) -> tuple[str, ...]:
    common = ("Keep shapes static: pad or bucket variable-length batches to a few sizes",
              "Drop the ragged last batch: dataset.batch(n, drop_remainder=True)")
    tf = ("TensorFlow: @tf.function(reduce_retracing=True) or an input_signature with None dimensions; "
          "pass tensors, not Python values, to tf.function",)
    jax = ("JAX: run with jax.config.update('jax_explain_cache_misses', True) to log why each cache miss happened",
           "JAX: mark configuration arguments static (static_argnums) and keep them hashable and stable",
           "JAX: use the persistent compilation cache (jax_compilation_cache_dir) so restarts do not recompile")
    if framework == "tensorflow":
        return common + tf
    if framework == "jax":
        return common + jax
    return common + tf + jax


def compile_evidence(host: HostResult) -> dict:
    c = host.compile
    # Compilation counts toward the verdict when it sits inside steps, or when the same work compiles
    # again and again (then the capture's share is what it costs).
    share = max(host.breakdown.part("compile"), c.share_of_capture_percent if c.compile_count >= 2 else 0.0)
    return {"compile_count": c.compile_count, "compile_ms": round(c.compile_ms, 3),
            "share_of_capture_percent": round(c.share_of_capture_percent, 2), SHARE_OF_STEP: round(share, 2),
            "functions": c.functions[:20], "program_cache_misses": c.program_cache_misses,
            "programs_in_metadata": c.programs_in_metadata, "tf_tracing_count_max": c.tf_tracing_count_max}


def compile_severity(host: HostResult, repeated: bool, finding_percent: float) -> Severity:
    share = max(host.compile.share_of_capture_percent, host.breakdown.part("compile"))
    if share >= BOUND_PERCENT:
        return Severity.HIGH
    return Severity.MEDIUM if repeated or share >= finding_percent else Severity.INFO


def compile_summary(host: HostResult) -> str:
    c = host.compile
    names = ", ".join(f"{f['function']} x{f['compile_count']}" for f in c.functions)
    return (f"{c.compile_count} compilations ({names}) took {c.compile_ms:.1f} ms, "
            f"{c.share_of_capture_percent:.1f}% of the capture window.")


def _host(counts: dict[str, int], share: float) -> HostResult:
    functions = [{"function": f, "framework": "jax", "compile_count": n, "compile_ms": 10.0 * n,
                  "share_of_capture_percent": share / max(len(counts), 1), "program_variants": n}
                 for f, n in counts.items()]
    return HostResult("h", framework="jax", compile=CompileFigures(
        sum(counts.values()), 10.0 * sum(counts.values()), share, functions=functions),
        breakdown=BreakdownFigures("host-loop-timeline", percent={"compile": share}))


class Recompilation(ProfileRule):
    """The same function compiled two or more times inside the capture window (shape or argument
    changes that miss the compilation cache); a bottleneck from 20 % of the time."""

    id = "recompilation"
    needs = ('compile-events', 'window', 'steps')
    confidence_from = ('compile-events', 'window')  # its severity: a share of the capture window
    title = "No function recompiles inside the capture"
    bottleneck = "compile-bound"
    scores_verdict = True
    lead_rank = 10
    COMPILE_FINDING_PERCENT = 5.0
    BOUND_PERCENT = BOUND_PERCENT
    docs = "https://jax.readthedocs.io/en/latest/jit-compilation.html"
    examples = (
        Example("one warm-up compile", _host({"train_step": 1}, 2.0), Status.PASS),
        Example("recompiles a little", _host({"train_step": 3}, 4.0), Status.WARN),
        Example("recompiles every step", _host({"train_step": 8}, 60.0), Status.FAIL),
    )

    def evaluate(self, host: HostResult):
        evidence = compile_evidence(host)
        repeated = host.compile.repeated
        if not repeated:
            return self.passed("no function compiled twice in the window", evidence=evidence)
        return self.fired(
            compile_severity(host, True, self.COMPILE_FINDING_PERCENT),
            f"Recompilation: {sum(f['compile_count'] for f in repeated)} compiles of {len(repeated)} function(s) "
            "in the window", compile_summary(host), evidence=evidence, fixes=recompile_fixes(host.framework))
