"""When a log line was printed: the one timestamp reader of every log reader (diagnosis, hang, goodput).

The forms: glog/absl (``I0813 17:19:52.231616 140 metric_logger.py:226] ...``), ISO 8601 and Python
logging's asctime (``2024-08-13 17:19:52,231``, with or without a zone), HF Trainer's
``[INFO|trainer.py:2134] 2024-06-10 12:00:00,000``, HF examples' ``06/12/2020 10:05:38`` and ``date``'s
``Tue Aug 13 17:15:02 UTC 2024``.

**The zone rule** (one, for every reader): a time that names its zone (``Z``, ``+02:00``, ``UTC``) is read
in it; a time without one is read in the zone ``--tz`` names, UTC by default, since TPU VMs and GKE
containers log in UTC. ``--tz local`` is this machine's zone, ``--tz Europe/Paris`` or ``--tz +05:30``
any other.

**The year rule**: glog/absl lines have a month and day but no year. ``Clock`` keeps the year of each
source: from a full date seen earlier in it, else the year it was told (``--year``), else the year of
``now``; it moves to the next year when the month-day goes back by more than half a year (a run across
New Year), and a time more than a day after ``now`` is from the year before (a log read in January).
"""

from __future__ import annotations

import calendar
import dataclasses
import re
import time as _time

from tpudoctor.logs.prefixes import GLOG, kubectl_worker

HALF_YEAR_S = 183 * 86400.0

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


@dataclasses.dataclass(frozen=True)
class Zone:
    """The zone zone-less times are read in (``--tz``): a fixed offset, or a named zone with its rules."""

    name: str = "UTC"
    fixed_offset_s: int | None = 0
    """Seconds east of UTC for a fixed zone; None for a named zone (DST applies)."""

    def offset_s(self, naive_epoch: float) -> int:
        """Seconds east of UTC at a wall-clock time read as if it were UTC."""
        if self.fixed_offset_s is not None:
            return self.fixed_offset_s
        return _named_offset_s(self.name, int(naive_epoch // 3600))

    def describe(self) -> str:
        return f"times without a zone are read as {self.name}" + ("" if self.name != "UTC" else
                                                                   " (TPU VMs and GKE containers log in UTC)")


UTC = Zone()
MAX_OFFSET_MIN = 14 * 60
"""UTC+14:00 (Line Islands) and UTC-12:00 are the extremes in use; 14 h either way bounds every real zone."""
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d\d):?(\d\d)$")


def zone(name: str | None) -> Zone:
    """``--tz``: ``UTC`` (default), ``local``, ``+05:30`` / ``UTC-08:00``, or an IANA name; ValueError when unknown."""
    if not name or name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    if m := _OFFSET.match(name):
        sign = -1 if m.group(1) == "-" else 1
        hours, minutes = int(m.group(2)), int(m.group(3))
        if minutes >= 60 or hours * 60 + minutes > MAX_OFFSET_MIN:
            raise ValueError(f"offset {name!r} is beyond any zone on Earth: give one from -14:00 to +14:00")
        return Zone(name, sign * (hours * 3600 + minutes * 60))
    if name == "local":
        return Zone("local", None)
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}: give UTC, local, an offset such as +05:30, "
                         "or a zone name such as Europe/Paris") from None
    return Zone(name, None)


_NAMED_CACHE: dict[tuple[str, int], int] = {}


def _named_offset_s(name: str, hour: int) -> int:
    key = (name, hour)
    cached = _NAMED_CACHE.get(key)
    if cached is not None:
        return cached
    import datetime as _dt

    wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(hours=hour)
    if name == "local":
        local = _dt.datetime.fromtimestamp(calendar.timegm(wall.timetuple())).astimezone()
        offset = int(local.utcoffset().total_seconds())  # type: ignore[union-attr]
    else:
        import zoneinfo

        offset = int(wall.replace(tzinfo=zoneinfo.ZoneInfo(name)).utcoffset().total_seconds())  # type: ignore[union-attr]
    if len(_NAMED_CACHE) > 100_000:
        _NAMED_CACHE.clear()
    _NAMED_CACHE[key] = offset
    return offset


def _zone_offset_s(zone: str | None) -> int:
    if not zone or zone == "Z":
        return 0
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)


def asctime_seconds(match: re.Match, tz: Zone = UTC) -> float | None:
    """``Tue Aug 13 17:15:02 UTC 2024`` (UTC, or no zone: ``tz``) to epoch seconds."""
    month = MONTHS[match.group(1)]
    t = _seconds(int(match.group(7)), month, int(match.group(2)), int(match.group(3)), int(match.group(4)),
                 int(match.group(5)), None)
    if t is None or match.group(6) in ("UTC", "GMT", "Z"):
        return t
    return t - tz.offset_s(t)


class Clock:
    """Reads the timestamp at the start of each line of one source, carrying the year across lines."""

    __slots__ = ("year", "year_source", "last_t", "glog_lines", "dated_lines", "tz", "now")

    def __init__(self, year: int | None = None, *, tz: Zone = UTC, now: float | None = None):
        self.year = year
        self.year_source = "given" if year is not None else None
        self.last_t: float | None = None
        self.glog_lines = 0
        self.dated_lines = 0
        self.tz = tz
        self.now = now
        """When the log is read: a zone-less year never puts a line more than a day after it."""

    def copy(self) -> Clock:
        other = Clock(self.year, tz=self.tz, now=self.now)
        other.year_source, other.last_t = self.year_source, self.last_t
        other.glog_lines, other.dated_lines = self.glog_lines, self.dated_lines
        return other

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
            elif head[1:2].isdigit():  # [2024-08-13 17:19:52,231]
                head = head[1:]
        m = ISO.match(head)
        if m:
            t = _seconds(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                         int(m.group(6)), m.group(7))
            if t is not None:
                t -= _zone_offset_s(m.group(8)) if m.group(8) else self.tz.offset_s(t)
                self.dated_lines += 1
                self.anchor(t)
            return t
        m = SLASH_DATE.match(head)
        if m:
            t = _seconds(int(m.group(3)), int(m.group(1)), int(m.group(2)), int(m.group(4)), int(m.group(5)),
                         int(m.group(6)), None)
            if t is not None:
                t -= self.tz.offset_s(t)
                self.dated_lines += 1
                self.anchor(t)
            return t
        return None

    def _glog(self, m: re.Match) -> float | None:
        if self.year is None:
            self.year, self.year_source = self._assumed_year(m), "assumed"
        t = self._glog_at(self.year, m)
        if t is None:
            return None
        if self.last_t is not None:
            if t < self.last_t - HALF_YEAR_S:  # December to January: the next year
                self.year += 1
                t = self._glog_at(self.year, m)
            elif t > self.last_t + HALF_YEAR_S:  # a stray line from before New Year
                t = self._glog_at(self.year - 1, m)
        if t is None:
            return None
        self.glog_lines += 1
        if self.last_t is None or t > self.last_t:
            self.last_t = t
        return t

    def _assumed_year(self, m: re.Match) -> int:
        """The year that puts the first glog line nearest before ``now`` (at most a day after it)."""
        now = self.now if self.now is not None else _time.time()
        wall_year = _time.gmtime(now + self.tz.offset_s(now)).tm_year
        best = wall_year
        best_gap: float | None = None
        for year in (wall_year - 1, wall_year, wall_year + 1):
            t = self._glog_at(year, m)
            if t is None or t > now + 86400:
                continue
            if best_gap is None or now - t < best_gap:
                best, best_gap = year, now - t
        return best

    def _glog_at(self, year: int, m: re.Match) -> float | None:
        t = _seconds(year, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                     m.group(6))
        return None if t is None else t - self.tz.offset_s(t)


def _year_of(t: float) -> int:
    return _time.gmtime(t).tm_year


def iso_utc(t: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC with a ``Z`` (how every document writes a time)."""
    if t is None:
        return None
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat().replace("+00:00", "Z")


def stamp_text(line: str) -> str | None:
    """The leading timestamp of a line as printed (``0813 17:19:52.231616`` of a glog line, the ISO text), for
    quoting; None when the line has none."""
    head = kubectl_worker(line[:160])[1][:64]
    if head[:1] == "[":
        head = head[1:]
    if head[:1] in "IWEF" and (m := GLOG.match(head)):
        return m.group(0)[1:]
    m = ISO.match(head)
    return m.group(0) if m else None


def sort_key(stamp: str | None) -> str | None:
    """A sortable ``MMDDhhmmss.ffffff`` of a quoted stamp (``stamp_text``, a Cloud Logging time); glog has no year,
    so two sources are put in order by their month, day and time alone."""
    if not stamp:
        return None
    m = ISO.match(stamp)
    if m:
        month, day, hh, mm, ss, frac = m.group(2), m.group(3), m.group(4), m.group(5), m.group(6), m.group(7)
    else:
        g = _GLOG_BODY.match(stamp)
        if g is None:
            return None
        month, day, hh, mm, ss, frac = g.groups()
    return f"{month}{day}{hh}{mm}{ss}.{(frac or '').ljust(6, '0')[:6]}"


_GLOG_BODY = re.compile(r"(\d\d)(\d\d)\s+(\d\d):(\d\d):(\d\d)(?:\.(\d+))?")


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
