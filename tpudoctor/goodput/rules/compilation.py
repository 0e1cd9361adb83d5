"""Compilation and first-step time at every start."""

from __future__ import annotations

from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.goodput.rules._common import badput, example_goodput, level, skipped

BUCKET = "PROGRAM_STARTUP"
FIXES = (
    "Keep compiled programs across restarts with JAX's persistent compilation cache, on storage every worker "
    "reads: jax.config.update('jax_compilation_cache_dir', 'gs://BUCKET/jax-cache') before the first jit "
    "(MaxText: jax_cache_dir=gs://BUCKET/jax-cache)",
    "Cache small programs too: jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)",
    "Look for recompilation in the steady state (shapes or static arguments that change): "
    "tpudoctor profile analyze lists the programs compiled in a capture",
)
CACHE_ON_FIXES = (
    "The persistent compilation cache is already serving programs: the rest is tracing and the first step; "
    "check that the cache directory is the same on every restart and every worker",
) + FIXES[2:]


class Compilation(GoodputRule):
    """Start-up compilation: the first step's time beyond a median step at each start (tracing, XLA
    compilation, program load), plus compilations the log reports later, as a share of wall time."""

    id = "compilation"
    title = "Compilation does not take a large share of the time"
    bucket = BUCKET
    WARN_PERCENT = 5.0
    FAIL_PERCENT = 15.0
    docs = "https://docs.jax.dev/en/latest/persistent_compilation_cache.html"
    examples = (
        Example("small", example_goodput(**{BUCKET: 1.0}), Status.PASS),
        Example("7% without cache", example_goodput(**{BUCKET: 7.0}), Status.WARN),
        Example("20%", example_goodput(**{BUCKET: 20.0}, restarts=4), Status.FAIL),
        Example("unknown", example_goodput(**{BUCKET: None}), Status.SKIP),
    )

    def evaluate(self, goodput):
        entry = badput(goodput, BUCKET)
        if entry.get("percent") is None:
            return skipped(self, "the log cannot tell how long compilation took: " + str(entry.get("reason") or
                                                                                        "no wall time"))
        pct = float(entry["percent"])
        comp = goodput.get("compilations") or {}
        hits = int(comp.get("cache_hits") or 0)
        evidence = {"program_startup_percent": pct, "program_startup_s": entry.get("seconds"),
                    "starts": int(goodput.get("restarts") or 0) + 1, "cache_hits": hits,
                    "cache_writes": int(comp.get("cache_writes") or 0),
                    "thresholds_percent": {"warn": self.WARN_PERCENT, "fail": self.FAIL_PERCENT}}
        severity = level(pct, self.WARN_PERCENT, self.FAIL_PERCENT)
        if severity is None:
            return self.passed(f"compilation and first steps took {pct:.1f}% of the wall time", evidence=evidence)
        starts = evidence["starts"]
        return self.fired(
            severity, f"Compilation takes {pct:.1f}% of the wall time",
            f"Compiling and running the first step took {entry.get('seconds') or 0:.0f} s over {starts} start(s) "
            f"({pct:.1f}% of the wall time)"
            + ("; the persistent compilation cache served programs" if hits else
               "; no line shows the persistent compilation cache serving a program") + ".",
            evidence=evidence, fixes=CACHE_ON_FIXES if hits else FIXES)
