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
        GoodputExample("the clock went back", {"ettr": 0.8, "nulls": {}, "steps": 10, "clock_jumps": [
            {"at": "train.log:11", "jump_s": -3618.0, "from": "2026-08-13T10:00:18Z", "to": "2026-08-13T09:00:00Z"}]},
            Status.WARN),
    )

    def evaluate(self, goodput):
        nulls = goodput.get("nulls") or {}
        jumps = goodput.get("clock_jumps") or []
        if goodput.get("ettr") is not None and jumps:
            first = jumps[0]
            return self.fired(
                Severity.LOW, f"the clock went back {len(jumps)} time(s), first at {first['at']} by "
                              f"{-first['jump_s']:g} s",
                f"The log's times go back at {first['at']} (from {first.get('from')} to {first.get('to')}): a clock "
                "step on the host, or lines of two runs or files put together. The wall time is the sum of the "
                "segments between the jumps; check the figures against the job's own start and end.",
                evidence={"clock_jumps": jumps[:5]},
                fixes=("Give each run's log as its own file (tpudoctor goodput run1.log run2.log), or read the job "
                       "from Cloud Logging, whose entries carry their own time: tpudoctor goodput --tpu NAME",))
        if goodput.get("ettr") is not None:
            return self.passed("timed step lines: wall time, ETTR and the badput buckets are measured",
                               evidence={"steps": goodput.get("steps")})
        why = nulls.get("ettr") or nulls.get("wall_s") or "no ETTR"
        return self.fired(Severity.MEDIUM, "ETTR unknown: " + why.split(":")[0].split(";")[0][:100],
                          f"The log cannot support an ETTR: {why}",
                          evidence={"steps": goodput.get("steps"), "nulls": dict(nulls)}, fixes=FIXES)
