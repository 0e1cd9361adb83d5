"""The two judgements the rate rules share: a chip against its peers, and the chips' sustained figure (p10 over
repetitions) against the generation's published peak."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from tpudoctor.diag import stats
from tpudoctor.diag.measure import RATE_UNITS, Timings
from tpudoctor.diag.remedies import chip_fault
from tpudoctor.diag.rule import DiagInput, DiagRule
from tpudoctor.findings import Finding, Remediation, Severity, Status


def longer(slowness: float) -> str:
    """A time ratio to the peers in words: 1.308 -> ``30.8% longer`` (its rate is then 1/1.308, 23.5 % lower)."""
    return f"{slowness - 1:.1%} longer" if slowness >= 1 else f"{1 - slowness:.1%} shorter"


def rate_below(slowness: float) -> str:
    """The same ratio as a rate: 1.308 -> ``23.5% below``."""
    return f"{1 - 1 / slowness:.0%} below" if slowness >= 1 else f"{1 / slowness - 1:.0%} above"


class PeerRateRule(DiagRule):
    """A chip slower than its peers in the same repetitions, by more than the run's noise allows."""

    what: ClassVar[str] = ""

    def timings(self, subject: DiagInput) -> Timings:
        return getattr(subject, self.measurement)

    def evaluate(self, subject: DiagInput) -> Finding:
        finding = self._judge(subject)
        timings = self.timings(subject)
        if not timings.looks:
            return finding
        first = timings.looks[0]["unclear"]
        said = (f"looked at twice: at first {first}; judged on {timings.judged_on}" if len(timings.looks) > 1
                else f"unclear ({first}), judged on {timings.judged_on}")
        return dataclasses.replace(finding, message=f"{finding.message} [{said}]")

    def _judge(self, subject: DiagInput) -> Finding:
        timings = self.timings(subject)
        table = stats.compare_peers(timings.frame, timings.unit)
        per_chip = {subject.chip(d): {"median": round(row[f"{timings.unit}_median"], 6),
                                      "p10": round(row[f"{timings.unit}_p10"], 6),
                                      "slowness": round(row["slowness"], 4), "margin": round(row["margin"], 4)}
                    for d, row in table.iterrows()}
        evidence = {"unit": timings.unit, "run": timings.size, "per_chip": per_chip, "reps": int(table["reps"].max())}
        if timings.looks:
            evidence.update(looks=list(timings.looks), judged_on=timings.judged_on)
        if table["slow"].isna().any():
            return self.judged(Status.PASS, Severity.INFO, f"{len(table)} device(s): too few to compare with peers",
                               evidence={**evidence, "confidence": "unknown",
                                         "confidence_why": f"a peer median needs {stats.MIN_PEERS} or more devices"},
                               host=subject.host)
        slow = table[table["slow"].astype(bool)]
        if slow.empty:
            worst = table["slowness"].max()
            return self.judged(Status.PASS, Severity.INFO,
                               f"{len(table)} chips within their margins of each other (the slowest one's runs "
                               f"take {longer(worst)} than its peers')",
                               evidence={**evidence, "confidence": "high"}, host=subject.host)
        sure = slow[slow["sure"].astype(bool)]
        if sure.empty:
            return self._unsure(subject, slow, evidence)
        slow = sure
        chips = [subject.chip(d) for d in slow.index]
        worst = slow["slowness"].max()
        near = bool(((slow["slowness"] - 1.0 - slow["margin"]) < 2 * slow["noise"]).any())
        confidence = "medium" if near else "high"
        detail = "; ".join(f"{subject.chip(d)}'s runs take {longer(row['slowness'])} than its peers' (margin "
                           f"{row['margin']:.1%})" for d, row in slow.iterrows())
        return self.judged(Status.FAIL, Severity.HIGH,
                           f"{', '.join(chips)} {'is' if len(chips) == 1 else 'are'} slower than {'its' if len(chips) == 1 else 'their'} "
                           f"peers at {self.what}: {detail}",
                           evidence={**evidence, "slow": chips, "worst_slowness": round(worst, 4),
                                     "confidence": confidence,
                                     "confidence_why": "within twice its own run-to-run noise of the margin" if near
                                     else "beyond the margin by more than twice its own noise"},
                           chips=chips, host=subject.host,
                           remediation=chip_fault(subject, chips, f"{self.what} {rate_below(worst)} its peers' "
                                                                  f"(its runs take {longer(worst)})", "PERFORMANCE"))


    def _unsure(self, subject: DiagInput, slow, evidence: dict) -> Finding:
        """Slower than the peers, but not beyond its own scatter: a WARN to rerun, never a chip to replace."""
        chips = [subject.chip(d) for d in slow.index]
        detail = "; ".join(f"{subject.chip(d)}'s runs take {longer(row['slowness'])} than its peers' (its own "
                           f"noise \u00b1{row['noise']:.1%})"
                           for d, row in slow.iterrows())
        return self.judged(Status.WARN, Severity.MEDIUM,
                           f"{', '.join(chips)} looked slower than the peers at {self.what} ({detail}), but its "
                           "repetitions scatter too much to tell: a busy host, or a chip to test again",
                           evidence={**evidence, "slow": chips, "confidence": "low",
                                     "confidence_why": f"less than {stats.OWN_NOISE_FACTOR:g} standard errors of "
                                                       "its own median above its peers"},
                           chips=chips, host=subject.host,
                           remediation=Remediation(text="Run it again with nothing else on the host; a chip slow "
                                                        "twice is a chip to replace.",
                                                   commands=(f"tpudoctor diag -r {subject.level}",)))


class PeakRateRule(DiagRule):
    """The chips' sustained figure (p10 over repetitions, median over chips) against the published peak."""

    peak_field: ClassVar[str] = ""
    warn_below: ClassVar[float] = 0.5
    what: ClassVar[str] = ""

    def evaluate(self, subject: DiagInput) -> Finding:
        timings: Timings = getattr(subject, self.measurement)
        unit = timings.unit
        shown = RATE_UNITS[unit]
        p10 = timings.frame.groupby("device")[unit].quantile(0.10)
        sustained = float(p10.median())
        peaks = subject.peaks
        peak = getattr(peaks, self.peak_field, None) if peaks else None
        evidence = {"unit": unit, "run": timings.size, "sustained_p10": round(sustained, 6),
                    "per_chip_p10": {subject.chip(int(d)): round(float(v), 6) for d, v in p10.items()}}
        if peaks is None or peak is None:
            kind = subject.inventory.devices[0].kind if subject.inventory.devices else "?"
            return self.judged(Status.PASS, Severity.INFO,
                               f"sustained {self.what} {sustained:.3g} {shown}; no published peak for {kind!r}",
                               evidence={**evidence, "confidence": "unknown",
                                         "confidence_why": f"the peaks table has no {self.peak_field} for this device "
                                                           "kind; judged against its peers only"}, host=subject.host)
        peak_in_unit = peak if unit == "tflops" else peak  # the table is in TFLOP/s and GB/s, as the runs are
        fraction = sustained / peak_in_unit
        evidence.update({"peak": peak, "fraction_of_peak": round(fraction, 4), "peaks_source": peaks.source,
                         "peaks_table_version": peaks.table_version})
        if fraction >= self.warn_below:
            return self.judged(Status.PASS, Severity.INFO,
                               f"sustained {self.what} {sustained:.4g} {shown}: {fraction:.0%} of the "
                               f"{peaks.label} peak ({peak:g} {shown})", evidence={**evidence, "confidence": "medium"},
                               host=subject.host)
        return self.judged(Status.WARN, Severity.MEDIUM,
                           f"sustained {self.what} {sustained:.4g} {shown} is {fraction:.0%} of the {peaks.label} "
                           f"peak ({peak:g} {shown}); below {self.warn_below:.0%}",
                           evidence={**evidence, "confidence": "low",
                                     "confidence_why": "every chip alike: the test's sizes, a throttled host or the "
                                                       "runtime's settings, more often than the chips"},
                           host=subject.host, remediation=Remediation(
                               text="Compare with another VM of the same type; if only this one is low, restart it "
                                    "elsewhere.", commands=(f"tpudoctor diag -r {subject.level} --format json",)))
