"""When a log line was printed: the timestamp prefixes TPU jobs' logs carry, read into seconds since the epoch.

glog/absl lines (``I0813 17:19:52.231616 140 metric_logger.py:226] ...``) have a month and day but no
year; ``Clock`` keeps the year of each source: from a full date seen earlier in it (an ISO stamp,
XPK's ``date`` line), else the year it was told, and it moves to the next year when the month-day
goes back by more than half a year (a run across New Year). Times without a zone are read as UTC
(TPU VMs and GKE containers log in UTC); the report says so.
"""

from __future__ import annotations

import calendar
import re

HALF_YEAR_S = 183 * 86400.0

GLOG = re.compile(r"[IWEF](\d\d)(\d\d) +(\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?")
# HF examples' ``06/12/2020 10:05:38 - INFO - ...``; transformers' ``[INFO|trainer.py:2134] 2024-06-10 12:00:00,000 >>``
SLASH_DATE = re.compile(r"(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d)")
HF_PREFIX = re.compile(r"\[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\|[^\]]*\] ")
# ``date`` and ``time.asctime()``: ``Tue Aug 13 17:15:02 UTC 2024``, ``Mon Jan  6 07:29:42 2020``
ASCTIME = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d+) "
                     r"(\d\d):(\d\d):(\d\d)(?: ([A-Z]{2,5}))? (\d{4})")
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                      "Nov", "Dec"), start=1)}


def _seconds(year: int, month: int, day: int, hh: int, mm: int, ss: int, frac: str | None) -> float | None:
    try:
        base = calendar.timegm((year, month, day, hh, mm, ss, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31 and hh < 24 and mm < 60 and ss < 61):
        return None
    return base + (float("0." + frac) if frac else 0.0)


def _zone_offset_s(zone: str | None) -> int:
    if not zone or zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def asctime_seconds(match: re.Match) -> float | None:
    """``Tue Aug 13 17:15:02 UTC 2024`` (UTC or no zone) to epoch seconds."""
    month = MONTHS[match.group(1)]
    return _seconds(int(match.group(7)), month, int(match.group(2)), int(match.group(3)), int(match.group(4)),
                    int(match.group(5)), None)


class Clock:
    """Reads the timestamp at the start of each line of one source, carrying the year across lines."""

    __slots__ = ("year", "year_source", "last_t", "glog_lines", "dated_lines")

    def __init__(self, year: int | None = None):
        self.year = year
        self.year_source = "given" if year is not None else None
        self.last_t: float | None = None
        self.glog_lines = 0
        self.dated_lines = 0

    def anchor(self, t: float) -> None:
        """A full date seen in the source (an ISO stamp, a ``date`` line): its year holds from here on."""
        year = _year_of(t)
        if self.year_source != "given":
            self.year, self.year_source = year, "log"
        self.last_t = t if self.last_t is None or t > self.last_t - HALF_YEAR_S else self.last_t

    def read(self, line: str) -> float | None:
        """Epoch seconds of the line's leading timestamp, or None when it has none."""
        head = line[:64]
        if head[:1] in "IWEF":
            m = GLOG.match(head)
            if m:
                return self._glog(m)
        if head[:1] == "[":
            hf = HF_PREFIX.match(head)
            if hf:
                head = head[hf.end():]
        m = ISO.match(head)
        if m:
            t = _seconds(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                         int(m.group(6)), m.group(7))
            if t is not None:
                t -= _zone_offset_s(m.group(8))
                self.dated_lines += 1
                self.anchor(t)
            return t
        m = SLASH_DATE.match(head)
        if m:
            t = _seconds(int(m.group(3)), int(m.group(1)), int(m.group(2)), int(m.group(4)), int(m.group(5)),
                         int(m.group(6)), None)
            if t is not None:
                self.dated_lines += 1
                self.anchor(t)
            return t
        return None

    def _glog(self, m: re.Match) -> float | None:
        month, day = int(m.group(1)), int(m.group(2))
        if self.year is None:
            import time

            self.year, self.year_source = time.gmtime().tm_year, "assumed"
        t = _seconds(self.year, month, day, int(m.group(3)), int(m.group(4)), int(m.group(5)), m.group(6))
        if t is None:
            return None
        if self.last_t is not None:
            if t < self.last_t - HALF_YEAR_S:  # December to January: the next year
                self.year += 1
                t = _seconds(self.year, month, day, int(m.group(3)), int(m.group(4)), int(m.group(5)), m.group(6))
            elif t > self.last_t + HALF_YEAR_S:  # a stray line from before New Year
                t = _seconds(self.year - 1, month, day, int(m.group(3)), int(m.group(4)), int(m.group(5)),
                             m.group(6))
        if t is None:
            return None
        self.glog_lines += 1
        if self.last_t is None or t > self.last_t:
            self.last_t = t
        return t


def _year_of(t: float) -> int:
    import time

    return time.gmtime(t).tm_year


def time_of_day_s(text: str) -> float | None:
    """``07:29:42`` to seconds after midnight (torch_xla's ``Time=``)."""
    parts = text.split(":")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    hh, mm, ss = (int(p) for p in parts)
    return hh * 3600.0 + mm * 60 + ss if hh < 24 and mm < 60 and ss < 61 else None


def duration_s(text: str) -> float | None:
    """``4m40.88s``, ``1h2m3s``, ``45.2s``, ``1:02:03`` (tqdm) or ``12.5`` to seconds."""
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            return None
        total = 0.0
        for value in values:
            total = total * 60 + value
        return total
    m = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?", text)
    if m and any(m.groups()):
        h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
        return h * 3600 + mi * 60 + s + ms / 1000
    try:
        return float(text)
    except ValueError:
        return None
