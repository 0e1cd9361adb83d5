"""The one log layer: a line gets the same time and the same fields through every reader.

goodput's event reader, hang's progress reader and the log diagnosis's event stamp all read a line through
``tpudoctor.logs`` (its clock, its prefixes, its step grammar); these tests generate step lines in the
frameworks' forms behind the timestamp prefixes jobs print (glog/absl, Python logging, ISO with and without a
zone, ``kubectl logs --prefix``) and read each one through all three.
"""

from __future__ import annotations

import calendar
import datetime as _dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paths import TESTS

from tpudoctor.goodput.line_patterns import Kind
from tpudoctor.goodput.lines import read_events
from tpudoctor.goodput.readers import READERS
from tpudoctor.hang.progress import line_time, parse_step_line
from tpudoctor.logdiag.events import LogEvent
from tpudoctor.logs import clock, steps
from tpudoctor.logs.clock import Clock, sort_key, stamp_text, zone

STEP_LINES = {  # framework -> a step line body with {step}, as the framework prints it
    "maxtext": "completed step: {step}, seconds: 0.631, TFLOP/s/device: 5688.282, loss: 12.979",
    "tpuestimator": "loss = 4.264659, step = {step} (124.394 sec)",
    "tf2-official": "Train Step: {step}/900000  / loss = 2.1434 / time = 0.143 sec",
    "torch_xla": "| Training Device=xla:0/3 Epoch=1 Step={step} Loss=0.10232 Rate=1752.03 GlobalRate=1431.32 "
                 "Time=07:29:42",
}
SECONDS = {"maxtext": 0.631, "tpuestimator": 124.394, "tf2-official": 0.143, "torch_xla": None}


def _prefix(form: str, t: _dt.datetime) -> str:
    """The timestamp prefix a job prints, for wall-clock time ``t`` (aware)."""
    if form == "glog":
        return f"I{t:%m%d %H:%M:%S}.{t.microsecond:06d} 140136352118592 metric_logger.py:226] "
    if form == "python-logging":
        return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} INFO train.py:88] "
    if form == "iso-z":
        return f"{t.astimezone(_dt.timezone.utc):%Y-%m-%dT%H:%M:%S}.{t.microsecond:06d}Z "
    if form == "iso-offset":
        return t.isoformat(timespec="microseconds") + " "
    raise AssertionError(form)


FORMS = ("glog", "python-logging", "iso-z", "iso-offset")
ZONES = ("UTC", "+05:30", "-08:00", "Europe/Paris")


@settings(max_examples=300, deadline=None)
@given(
    framework=st.sampled_from(sorted(STEP_LINES)),
    form=st.sampled_from(FORMS),
    tz_name=st.sampled_from(ZONES),
    when=st.datetimes(min_value=_dt.datetime(2019, 1, 1), max_value=_dt.datetime(2027, 12, 31)),
    step=st.integers(min_value=0, max_value=10**7),
    pod=st.booleans(),
)
def test_a_step_line_reads_the_same_in_every_reader(framework, form, tz_name, when, step, pod):
    tz = zone(tz_name)
    # The wall-clock time as the job printed it, in the zone the reader is told (--tz).
    offset_s = tz.offset_s(calendar.timegm(when.timetuple()))
    printed = when.replace(tzinfo=_dt.timezone(_dt.timedelta(seconds=offset_s)))
    line = _prefix(form, printed) + STEP_LINES[framework].format(step=step)
    if pod:
        line = "[pod/train-slice-job-0-1-x7k2p/jax-tpu] " + line
    expected_t = printed.timestamp()

    # goodput: the event's time, step and seconds
    events = list(read_events([line], "train.log", clock=Clock(printed.year if form == "glog" else None, tz=tz),
                              readers=READERS))
    assert [e.kind for e in events] == [Kind.STEP]
    event = events[0]
    assert event.t == pytest.approx(expected_t, abs=1e-3)
    assert event.step == step and event.framework == framework
    assert event.seconds == SECONDS[framework]
    assert event.worker == ("train-slice-job-0-1-x7k2p" if pod else None)

    # hang: the same step, seconds and time (read an hour after the line was printed)
    now = _dt.datetime.fromtimestamp(expected_t + 3600, _dt.timezone.utc)
    progress = parse_step_line(line)
    assert progress is not None and progress.step == step and progress.format == framework
    assert progress.seconds == SECONDS[framework]
    stamp = line_time(line, now, tz)
    assert stamp is not None and stamp.timestamp() == pytest.approx(expected_t, abs=1e-3)

    # log diagnosis: the event's quoted stamp is the printed wall time, and sorts as it
    quoted = LogEvent([line], 1, 1).timestamp
    assert quoted == stamp_text(line) and quoted is not None
    wall = printed if form != "iso-z" else printed.astimezone(_dt.timezone.utc)
    assert sort_key(quoted)[:10] == f"{wall:%m%d%H%M%S}"


@pytest.mark.parametrize("form", steps.load_forms(), ids=lambda f: f"{f.framework}:{f.keyword}")
def test_every_grammar_example_reads_as_its_form_in_every_reader(form):
    """Each documented example gives its own form and expected counter to hang, and a step event to goodput."""
    for line, expected in zip(form.examples, form.expect, strict=True):
        match = steps.match_step(line)
        assert match is not None and match.form is form, line
        if expected >= 0:
            assert match.progress == pytest.approx(expected)
            assert parse_step_line(line).step == pytest.approx(expected)
        if form.kind == "step":
            events = [e for e in read_events([line], "x", readers=READERS) if e.kind is Kind.STEP]
            assert len(events) == 1 and events[0].framework == form.framework, line
        else:  # a progress counter: hang reads it, goodput does not count it as a training step
            assert not [e for e in read_events([line], "x", readers=READERS) if e.kind is Kind.STEP]


def test_a_time_without_a_zone_is_read_in_the_zone_given_and_utc_by_default():
    line = "I1130 10:00:00.000000 1 train.py:1] completed step: 3, seconds: 1.0"
    utc = Clock(2026).read(line)
    assert utc == calendar.timegm((2026, 11, 30, 10, 0, 0))
    assert Clock(2026, tz=zone("+05:30")).read(line) == utc - 5.5 * 3600
    assert Clock(2026, tz=zone("Europe/Paris")).read(line) == utc - 3600  # CET in November
    assert Clock(2026, tz=zone("Europe/Paris")).read(line.replace("I1130", "I0730")) == \
        calendar.timegm((2026, 7, 30, 10, 0, 0)) - 7200  # CEST in July
    # a zone the line names wins over --tz
    assert Clock(tz=zone("+05:30")).read("2026-11-30T10:00:00Z step 3") == utc
    with pytest.raises(ValueError, match="unknown time zone"):
        zone("Mars/Olympus")


def test_a_glog_year_is_never_more_than_a_day_after_now():
    january = calendar.timegm((2027, 1, 2, 0, 0, 0))
    t = Clock(now=january).read("I1231 23:59:58.500000 1 x.py:1] x")
    assert t == calendar.timegm((2026, 12, 31, 23, 59, 58)) + 0.5


def test_the_old_per_reader_parsers_are_gone():
    """One timestamp reader, one step grammar: no reader keeps a timestamp or step regex of its own."""
    root = Path(clock.__file__).resolve().parents[1]
    offenders = []
    for path in root.rglob("*.py"):
        if path.parts[-2] == "logs" or "testing" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ("_GLOG_TIME", "_ISO_TIME", "STEP_FORMATS", "def time_key", "def line_time(line: str, now: "
                       "_dt.datetime) ", "completed step: (", "strptime("):
            if needle in text:
                offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []


def _events(events):
    return [(e.kind, e.step, e.t, e.line_no, e.seconds, e.worker, e.text) for e in events]


@pytest.mark.parametrize("path", sorted((TESTS / "data" / "logs" / "training").glob("*.log"))
                         + sorted((TESTS / "fixtures" / "goodput").glob("*.log")),
                         ids=lambda p: p.stem)
def test_the_block_reader_gives_the_events_the_line_reader_gives(path):
    """goodput reads files in blocks and decodes only the lines with a keyword; on real logs, cut into small
    blocks so lines fall on every boundary, it gives the same events, times and line numbers as reading every
    line, and the same source statistics."""
    import io

    from tpudoctor.goodput.lines import read_event_blocks
    from tpudoctor.logs.sources import byte_blocks

    data = path.read_bytes()
    text_lines = data.decode("utf-8", errors="replace").splitlines()
    line_stats, block_stats = {}, {}
    by_line = _events(read_events(text_lines, path.name, clock=Clock(2024), stats=line_stats))
    blocks = byte_blocks(io.BufferedReader(io.BytesIO(data)), block_bytes=512)
    by_block = _events(read_event_blocks(blocks, path.name, clock=Clock(2024), stats=block_stats))
    assert by_block == by_line
    for key in ("lines", "first_t", "last_t", "timed_events"):
        assert block_stats[key] == line_stats[key], key
    # the same log as Windows or a web form saves it (CRLF): the same events at the same lines
    crlf_stats: dict = {}
    crlf = byte_blocks(io.BufferedReader(io.BytesIO(data.replace(b"\n", b"\r\n"))), block_bytes=512)
    assert _events(read_event_blocks(crlf, path.name, clock=Clock(2024), stats=crlf_stats)) == by_line
    assert crlf_stats["lines"] == line_stats["lines"]


def test_the_prefilter_finds_the_same_lines_without_re2():
    from tpudoctor.logs import prefilter

    data = b"noise\nI0101 00:00:01.000 1 t.py:1] completed step: 1\nSOCKET CLOSED by peer\nmore noise\nError x"
    fast = prefilter.Literals(["completed step:", "Error"], ["socket closed"])
    saved = prefilter._re2
    try:
        prefilter._re2 = None
        slow = prefilter.Literals(["completed step:", "Error"], ["socket closed"])
    finally:
        prefilter._re2 = saved
    assert list(fast.line_spans(data)) == list(slow.line_spans(data)) == [(6, 52), (53, 74), (86, 93)]


def test_byte_blocks_keep_whole_lines_and_cut_an_overlong_one():
    import io

    from tpudoctor.logs.sources import byte_blocks

    data = b"a\n" + b"x" * 100 + b"\nb\nc"
    blocks = list(byte_blocks(io.BufferedReader(io.BytesIO(data)), block_bytes=7, max_line_bytes=10))
    assert b"".join(blocks).split(b"\n") == [b"a", b"x" * 10, b"b", b"c"]
    assert all(block.endswith(b"\n") for block in blocks[:-1])


LOG_ROOT = TESTS / "data" / "logs"


@pytest.mark.parametrize("block_bytes", [256, 4096, 1 << 20])
def test_log_diagnosis_skipping_cold_blocks_finds_what_reading_every_line_finds(block_bytes):
    """Every real log the project holds (corpus, held-out sets, training logs, signature logs), read as the
    command reads a file (blocks of raw bytes, cold ones skipped unread) and line by line: the same findings, in
    the same order, at the same lines, with the same counts, and the same number of lines."""
    import io

    from tpudoctor.logdiag import Diagnoser
    from tpudoctor.logs.sources import blocks_then_lines

    def summary(d):
        return [(f.id, f.status, f.evidence.get("first_line_no"), f.evidence.get("count"), f.message)
                for f in d.diagnoses()]

    paths = sorted(LOG_ROOT.rglob("*.log"))
    assert len(paths) > 300
    for path in paths:
        data = path.read_bytes()
        by_line = Diagnoser()
        by_line.feed_lines(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"), path.name)
        by_block = Diagnoser()
        by_block.feed_blocks(blocks_then_lines(io.BufferedReader(io.BytesIO(data)), block_bytes=block_bytes),
                             path.name)
        assert summary(by_block) == summary(by_line), path.name
        assert by_block.lines_scanned == by_line.lines_scanned, path.name
