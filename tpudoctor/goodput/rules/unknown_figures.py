"""Says when the log cannot support the goodput figures, and what would."""

from __future__ import annotations

from tpudoctor.findings import Severity, Status
from tpudoctor.goodput.rule import Example, GoodputRule

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
        Example("timed", {"ettr": 0.9, "nulls": {}, "steps": 10}, Status.PASS),
        Example("no timestamps", {"ettr": None, "nulls": {"ettr": "the log's lines carry no timestamps"},
                                         "steps": 10}, Status.WARN),
        Example("no steps", {"ettr": None, "nulls": {"ettr": "no step line"}, "steps": None}, Status.WARN),
        Example("zones disagree", {"ettr": 0.01, "nulls": {}, "steps": 10, "consistency": {
            "unsupported": "lines with a zone and lines without disagree by 7.0 h", "zone_skews": [
                {"zoned_at": "a.log:28", "zoned": "2024-08-13T10:06:45Z", "zoneless_at": "a.log:27",
                 "zoneless": "2024-08-13T17:06:40Z", "skew_s": 25195.0, "tz": "local", "suggested_tz": "UTC"}]}},
            Status.FAIL),
        Example("one line ahead", {"ettr": 0.27, "nulls": {}, "steps": 10, "consistency": {
            "clock_outliers": [{"at": "a.log:11", "ahead_s": 7190.0, "time": "2024-08-13T12:04:10Z",
                                "next_at": "a.log:12", "next_time": "2024-08-13T10:04:20Z",
                                "treated": "its time dropped"}]}}, Status.WARN),
        Example("the clock went back", {"ettr": 0.8, "nulls": {}, "steps": 10, "clock_jumps": [
            {"at": "train.log:11", "jump_s": -3618.0, "from": "2026-08-13T10:00:18Z", "to": "2026-08-13T09:00:00Z"}]},
            Status.WARN),
    )

    def evaluate(self, goodput):
        finding = self._judge(goodput)
        confidence = (goodput.get("consistency") or {}).get("confidence")
        if confidence:
            import dataclasses

            from tpudoctor.findings import Confidence

            finding = dataclasses.replace(finding, confidence=Confidence.from_dict(confidence))
        return finding

    def _judge(self, goodput):
        nulls = goodput.get("nulls") or {}
        jumps = goodput.get("clock_jumps") or []
        consistency = goodput.get("consistency") or {}
        if goodput.get("ettr") is not None and consistency.get("unsupported"):
            skews = consistency.get("zone_skews") or []
            fixes = [f"Read the zoneless lines in the zone that puts them in order with the zoned ones: "
                     f"--tz {skews[0]['suggested_tz']}" if skews and skews[0].get("suggested_tz") else
                     "Check the zone (--tz) and the dates of the lines named: the figures are not usable as they "
                     "stand"] if skews else []
            fixes.append("Give each run's log as its own file, or read the job from Cloud Logging, whose entries "
                         "carry their own time: tpudoctor goodput --tpu NAME")
            return self.fired(Severity.HIGH, "the log's times contradict each other: the figures are not supported",
                              f"The log cannot support its figures: {consistency['unsupported']}. A share over the "
                              "wall time cannot be true, so the buckets are capped at 100 % and ETTR is not judged.",
                              evidence={"zone_skews": skews[:5], "overrun_s": consistency.get("overrun_s")},
                              fixes=fixes)
        outliers = consistency.get("clock_outliers") or []
        if goodput.get("ettr") is not None and outliers and not jumps:
            first = outliers[0]
            return self.fired(
                Severity.LOW, f"{len(outliers)} line(s) with a clock ahead of their neighbours set aside, first at "
                              f"{first['at']} ({first['ahead_s']:g} s ahead)",
                f"The line at {first['at']} says {first['time']}, but the lines before and after it (next: "
                f"{first['next_at']}, {first['next_time']}) agree with each other: that one line's time is wrong, "
                f"not the job's ({first['treated']}). The wall time follows its neighbours.",
                evidence={"clock_outliers": outliers[:5]},
                fixes=("Check how the log was put together (a line edited or copied in from another run); the "
                       "figures around that line rest on its neighbours' times",))
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
