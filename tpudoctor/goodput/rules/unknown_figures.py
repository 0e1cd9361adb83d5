"""Says when the log cannot support the goodput figures, and what would."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.goodput.rule import GoodputExample, GoodputRule

FIXES = (
    "Keep the time on each line: absl/glog prefixes (JAX and TensorFlow print them by default), Python logging "
    "with %(asctime)s, or read the job's logs from Cloud Logging, whose entries carry a timestamp: "
    "tpudoctor goodput --tpu NAME --since 24h",
    "If the job uses a framework tpudoctor does not read, name its step line: --step-pattern 'step (?P<step>\\d+)'",
)


class GoodputMeasurable(GoodputRule):
    """The log supports an ETTR: it has timed step lines. Otherwise WARN, quoting what is missing (a figure the
    log cannot support is null, never a guess)."""

    id = "goodput-measurable"
    title = "The log supports the goodput figures"
    docs = "https://github.com/AI-Hypercomputer/ml-goodput-measurement"
    examples = (
        GoodputExample("timed", {"ettr": 0.9, "nulls": {}, "steps": 10}, Status.PASS),
        GoodputExample("no timestamps", {"ettr": None, "nulls": {"ettr": "the log's lines carry no timestamps"},
                                         "steps": 10}, Status.WARN),
        GoodputExample("no steps", {"ettr": None, "nulls": {"ettr": "no step line"}, "steps": None}, Status.WARN),
    )

    def evaluate(self, goodput):
        nulls = goodput.get("nulls") or {}
        if goodput.get("ettr") is not None:
            return self.passed("timed step lines: wall time, ETTR and the badput buckets are measured",
                               evidence={"steps": goodput.get("steps")})
        why = nulls.get("ettr") or nulls.get("wall_s") or "no ETTR"
        return self.fired(Severity.MEDIUM, "ETTR unknown: " + why.split(":")[0].split(";")[0][:100],
                          f"The log cannot support an ETTR: {why}",
                          evidence={"steps": goodput.get("steps"), "nulls": dict(nulls)}, fixes=FIXES)
