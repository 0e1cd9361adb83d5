"""Every clock on a line, and which one is the process's: a collector's receive time, the process's own
absl/glog time (4- or 8-digit date), ISO with or without a zone, epoch seconds or milliseconds, and relative
counters (``elapsed 0.38m``, ``wall=439``, ``t=348.07``, a progress bar's ``[16:00<``).

>>> [c.kind for c in clocks_on('2024-06-01T10:00:01.5Z stdout F I0601 10:00:00.900000 1 train.py:9] step 3')]
['iso', 'glog']
>>> pick([c for c in clocks_on('2024-06-01T10:00:01.5Z stdout F I0601 10:00:00.900000 1 x.py:9] hi')]).kind
'glog'

A collector prints its time first and the process's line after it, so of several absolute clocks on one line
the last (innermost) is the process's; relative counters time the process since its own start.
"""

from __future__ import annotations

import calendar
import dataclasses
import re

import numpy as np

ISO = re.compile(r"(?<!\d)(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?(?!\d)")
GLOG = re.compile(r"(?<![\w])[IWEF](\d{4})?(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?!\d)")
EPOCH_MS = re.compile(r"\"?(?:time_ms|timestamp_ms|ts_ms)\"?\s*[:=]\s*(\d{13})\b")
EPOCH_S = re.compile(r"\"?(?:time|timestamp|ts|created)\"?\s*[:=]\s*(1[4-9]\d{8}(?:\.\d+)?)\b")
RELATIVE = re.compile(r"\b(elapsed|wall|t|uptime|time_since_start)\s*[=:]?\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\b(?![/.\d])")
RELATIVE_HMS = re.compile(r"\b(?:elapsed)\s*[=:]?\s*(?:(\d+):)?(\d+):(\d\d)\b|\[(?:(\d+):)?(\d+):(\d\d)<")
UNIT_S = {None: 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}


# not frozen: a frozen dataclass's __init__ takes twice as long, and a long log makes one a step line
@dataclasses.dataclass(slots=True)
class LineClock:
    kind: str
    """iso, glog, epoch_ms, epoch_s (absolute) or relative."""
    t: float
    """Epoch seconds (absolute) or seconds since the process started (relative)."""
    at: int
    """Where on the line it stands."""
    resolution_s: float
    zone_given: bool = True

    @property
    def absolute(self) -> bool:
        return self.kind != "relative"


def _frac(text: str | None) -> float:
    return float("0." + text) if text else 0.0


def _iso_clock(m: re.Match, at: int) -> LineClock | None:
    try:
        t = calendar.timegm((int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    zone = m[8]
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        t -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    res = 10 ** -len(m[7]) if m[7] else 1.0
    return LineClock("iso", t + _frac(m[7]), at, res, zone_given=bool(zone))


def _glog_clock(m: re.Match, at: int, year: int | None) -> LineClock | None:
    y = int(m[1]) if m[1] else (year or 1970)
    try:
        t = calendar.timegm((y, int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    res = 10 ** -len(m[7]) if m[7] else 1.0
    return LineClock("glog", t + _frac(m[7]), at, res, zone_given=False)


def clocks_on(line: str, *, year: int | None = None) -> list[LineClock]:
    """The clocks one line carries, in the order they stand."""
    out: list[LineClock] = []
    for m in ISO.finditer(line):
        if (c := _iso_clock(m, m.start())) is not None:
            out.append(c)
    for m in GLOG.finditer(line):
        if (c := _glog_clock(m, m.start(), year)) is not None:
            out.append(c)
    for m in EPOCH_MS.finditer(line):
        out.append(LineClock("epoch_ms", int(m[1]) / 1000.0, m.start(), 0.001))
    for m in EPOCH_S.finditer(line):
        out.append(LineClock("epoch_s", float(m[1]), m.start(), 1.0))
    for m in RELATIVE.finditer(line):
        if m[1] == "t" and m[3] is None and "." not in m[2]:
            continue  # a bare t=3 is as likely a counter as a time
        unit = UNIT_S[m[3]]
        decimals = len(m[2].split(".")[1]) if "." in m[2] else 0
        out.append(LineClock("relative", float(m[2]) * unit, m.start(), unit * 10 ** -decimals))
    for m in RELATIVE_HMS.finditer(line):
        h, mi, s = (m[1], m[2], m[3]) if m[2] else (m[4], m[5], m[6])
        out.append(LineClock("relative", int(h or 0) * 3600 + int(mi) * 60 + int(s), m.start(), 1.0))
    out.sort(key=lambda c: c.at)
    return out


def pick(clocks: list[LineClock]) -> LineClock | None:
    """The process's clock among one line's: the innermost absolute one (a collector's stands before it), else a
    relative counter."""
    absolute = [c for c in clocks if c.absolute]
    if absolute:
        return absolute[-1]
    return clocks[0] if clocks else None


def describe(kind: str, several: bool) -> str:
    names = {"iso": "an ISO date and time", "glog": "absl/glog's date and time", "epoch_ms": "epoch milliseconds",
             "epoch_s": "epoch seconds", "relative": "a counter of time since the process started (no date)"}
    why = " (the innermost of several clocks on a line: a collector's or launcher's stands before the process's)" \
        if several else ""
    return f"the process's clock: {names[kind]}{why}"


def innermost_of_kind(line: str, kind: str, *, year: int | None = None) -> LineClock | None:
    """The line's last clock of one kind (the kind a log's sample showed is its process's): one regex, not all."""
    pattern = {"iso": ISO, "glog": GLOG, "epoch_ms": EPOCH_MS, "epoch_s": EPOCH_S}.get(kind)
    if pattern is None:
        return pick(clocks_on(line, year=year))
    last = None
    for last in pattern.finditer(line):  # noqa: B007 (the last match is the one kept)
        pass
    if last is None:
        return None
    # the match read at once (at 0, as the match alone would be): clocks_on would run every clock's regex again
    if kind == "iso":
        return _iso_clock(last, 0)
    if kind == "glog":
        return _glog_clock(last, 0, year)
    found = [c for c in clocks_on(line[last.start():last.end()], year=year) if c.kind == kind]
    return found[-1] if found else None


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates, a column at a time (H. Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_INNERMOST = {kind: re.compile(rb"(?m)^(?:[^\n]*" + pattern.pattern.encode() + rb")?[^\n]*$")
              for kind, pattern in (("iso", ISO), ("glog", GLOG))}
_ONE = {"iso": re.compile(ISO.pattern.encode()), "glog": re.compile(GLOG.pattern.encode())}


def _iso_matches(rows: bytes) -> list[re.Match[bytes]]:
    """What ``finditer`` of the ISO clock finds in ``rows``, tried only where numpy finds its date's shape
    (``dddd-dd-dd``): the regex alone tries every byte, which is most of a long log's clock reading."""
    pattern = _ONE["iso"]
    a = np.frombuffer(rows, dtype=np.uint8)
    dashes = np.flatnonzero(a == 45)
    p = dashes[(dashes >= 4) & (dashes + 6 < len(a))] - 4
    digit = (a >= 48) & (a <= 57)
    p = p[digit[p] & digit[p + 1] & digit[p + 2] & digit[p + 3] & digit[p + 5] & digit[p + 6] & (a[p + 7] == 45)]
    out: list[re.Match[bytes]] = []
    end = 0
    for at in p.tolist():
        if at >= end and (m := pattern.match(rows, at)) is not None:
            out.append(m)
            end = m.end()
    return out


_ISO_DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
_ISO_AFTER = np.frombuffer(b".,Z+-0123456789", dtype=np.uint8)


def _whole_second_iso(rows: bytes, count: int) -> np.ndarray | None:
    """Each row's time where every row holds exactly one ISO clock, ``dddd-dd-dd[T ]dd:dd:dd`` with no fraction
    and no zone after it (what ``innermost_times`` reads then, its fields cut out by numpy, no regex); None
    otherwise."""
    a = np.frombuffer(rows, dtype=np.uint8)
    if len(a) < 19:
        return None
    dashes = np.flatnonzero(a == 45)
    p = dashes[(dashes >= 4) & (dashes + 15 <= len(a))] - 4
    p = p[(a[p + 7] == 45) & ((a[p + 10] == 32) | (a[p + 10] == 84)) & (a[p + 13] == 58) & (a[p + 16] == 58)]
    if len(p) != count:  # the separators first: the digits are gathered for the few places left
        return None
    digits = a[p[:, None] + _ISO_DIGITS] - 48
    if not (digits <= 9).all():
        return None
    before = a[np.maximum(p - 1, 0)]
    if ((p > 0) & (before >= 48) & (before <= 57)).any():
        return None
    after = p + 19
    if (after[after < len(a)].size and np.isin(a[after[after < len(a)]], _ISO_AFTER).any()):
        return None  # a fraction, a zone or a longer number: the regex's reading
    newlines = np.flatnonzero(a == 10)
    if len(newlines) + 1 != count or not (np.searchsorted(newlines, p) == np.arange(count)).all():
        return None  # not one per row
    d = digits.astype(np.int64)
    y = d[:, 0] * 1000 + d[:, 1] * 100 + d[:, 2] * 10 + d[:, 3]
    mo, day, h, mi, s = (d[:, k] * 10 + d[:, k + 1] for k in (4, 6, 8, 10, 12))
    if not ((1 <= mo) & (mo <= 12) & (1 <= day) & (day <= 31) & (h <= 23) & (mi <= 59) & (s <= 61)).all():
        return None
    return (_days_from_civil(y, mo, day) * 86400 + h * 3600 + mi * 60 + s) + np.zeros(count)


def innermost_times(rows: bytes, count: int, kind: str, *, year: int | None = None) -> list[LineClock | None] | None:
    """Each row's last clock of one kind (``rows``: ``count`` lines joined by newlines), read a column at a time:
    one regex over all rows, the dates and times as numpy columns. None where the rows need the line-at-a-time
    reading (a zone other than Z, a date no calendar has, another kind)."""
    pattern = _INNERMOST.get(kind)
    if pattern is None or count == 0:
        return None
    if kind == "iso" and (whole := _whole_second_iso(rows, count)) is not None:
        return [LineClock("iso", tt, 0, 1.0, zone_given=False) for tt in whole.tolist()]
    matches = _iso_matches(rows) if kind == "iso" else list(_ONE[kind].finditer(rows))
    found = [m.groups(b"") for m in matches]
    if len(found) == count:  # one clock per row, unless some row has two and another none
        newlines = np.flatnonzero(np.frombuffer(rows, dtype=np.uint8) == 10)
        at = np.fromiter((m.start() for m in matches), dtype=np.int64, count=len(matches))
        rows_hit = np.searchsorted(newlines, at)
        if len(newlines) + 1 != count or not (np.diff(rows_hit) == 1).all():
            found = []
    if len(found) != count:
        found = pattern.findall(rows)  # not one clock of the kind per row: the last on each row
    if len(found) != count:
        return None
    table = np.array(found, dtype="S9")
    present = table[:, 1 if kind == "iso" else 2] != b""

    def column(k: int) -> np.ndarray:
        return np.where(table[:, k] == b"", b"0", table[:, k]).astype(np.int64)

    if kind == "iso":
        if ((table[:, 7] != b"") & (table[:, 7] != b"Z")).any():
            return None
        y, mo, d, h, mi, s = (column(k) for k in range(6))
        zone_given = table[:, 7] == b"Z"
    else:
        given = table[:, 0] != b""
        y = np.where(given, column(0), year or 1970)
        mo, d, h, mi, s = (column(k) for k in range(1, 6))
        zone_given = np.zeros(count, dtype=bool)
    ok = ~present | ((1 <= mo) & (mo <= 12) & (1 <= d) & (d <= 31) & (h <= 23) & (mi <= 59) & (s <= 61))
    if not ok.all():
        return None
    digits = np.char.str_len(table[:, 6]).astype(np.int64)
    scale = 10.0 ** -digits
    fraction = np.char.add(b"0.", np.where(table[:, 6] == b"", b"0", table[:, 6])).astype(np.float64)
    t = (_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) + fraction
    resolution = np.where(digits > 0, scale, 1.0)
    iso = kind == "iso"
    return [LineClock(kind, tt, 0, res, zone_given=zone if iso else False) if has else None
            for has, tt, res, zone in zip(present.tolist(), t.tolist(), resolution.tolist(), zone_given.tolist(),
                                          strict=True)]
