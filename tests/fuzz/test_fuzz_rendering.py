"""Every renderer, every format, hostile strings in every field that comes from outside tpudoctor (a report
read back, a worker id, a host or file name, a log line, an op name): control characters, ESC/OSC sequences,
newlines, bidi overrides, <script>, <img onerror>, Markdown metacharacters, rich markup.

What must hold, whatever the strings:
* text: no control character but the renderer's own newlines, no bidi control, no line a field started;
* markdown: no raw HTML but the renderer's own <details>/<summary>, no heading a field started;
* HTML: no markup but the renderer's own tags, no event-handler attribute;
* JUnit: parses as XML;
* JSON: parses and round-trips.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutations import time_bound
from test_fuzz_reports import inputs as report_inputs

from tpudoctor.findings import Finding, Remediation, Report, Scope, Severity, Status, Step, Target

SENTINEL = "\u2042"  # ⁂: in the strategies it only ever follows a line break, so it may never start a line
NASTY = [
    "\x1b[2J\x1b[H", "\x1b]0;pwned\x07", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "\x9b31m",
    "\x1b[32m[✓] ALL GOOD\x1b[0m", "\x00", "\x07", "\x7f", "\x08\x08\x08", "\r", f"\n{SENTINEL}",
    f"\r\n{SENTINEL}", f"\u2028{SENTINEL}", f"\x85{SENTINEL}", f"\n# {SENTINEL}", f"\n## Root cause: {SENTINEL}",
    "\u202etxt.exe", "\u2066", "\u200f", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    "</td></tr></table><b>", "<!--", "]]>", "**bold**", "_em_", "`", "```", "~~~", "[x](javascript:alert(1))",
    "![i](https://evil.example/i.png)", "| a | b |", "&lt;b&gt;", "&amp;", "\\", "[bold red]", "[/]", ":warning:",
    "\ud800", "\ufffe", "' \" ", "{0} %s", "-->", "\t",
]
hostile = st.lists(st.one_of(st.sampled_from(NASTY),
                             st.text(st.characters(blacklist_characters=SENTINEL), max_size=6)),
                   min_size=1, max_size=5).map("".join)

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
LINE_STARTS = ("\n", "\r", "\u2028", "\u2029", "\x85")


# ---------------------------------------------------------------- what must hold, per format

def assert_safe_text(out: str) -> None:
    bad = [c for c in out if c != "\n" and (unicodedata.category(c) in ("Cc", "Cs") or c in BIDI)]
    assert not bad, f"control characters in text output: {bad[:5]!r}"
    assert not any(f"{brk}{SENTINEL}" in out for brk in LINE_STARTS), "a field started a line"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


HTML_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "code", "pre", "div",
             "span", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "ul", "li", "i", "svg", "rect",
             "line", "text", "circle", "path", "script", "br", "polyline"}


def assert_safe_html(out: str, *, scripts: int = 0) -> None:
    parser = _Tags()
    parser.feed(out)
    names = [tag for tag, _ in parser.tags]
    assert set(names) <= HTML_TAGS, set(names) - HTML_TAGS
    assert names.count("script") == scripts
    handlers = [(tag, name) for tag, attrs in parser.tags for name, _ in attrs if name.startswith("on")]
    assert not handlers, handlers
    bad = [c for c in out if c not in "\n\t" and (unicodedata.category(c) in ("Cc", "Cs") or c in BIDI)]
    assert not bad, f"control characters in HTML: {bad[:5]!r}"


def assert_safe_markdown(out: str) -> None:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").enable("strikethrough")
    tokens = md.parse(out)
    for token in tokens:
        for t in [token, *(token.children or [])]:
            if t.type in ("html_block", "html_inline"):
                ours = re.sub(r"</?(details|summary)>|evidence|stack", "", t.content)  # the renderers' own folds
                assert not ours.strip(), f"raw HTML: {t.content!r}"
            if t.type == "link_open":
                assert t.attrs.get("href", "").startswith("https://"), t.attrs
            if t.type == "image":
                raise AssertionError(f"an image from a field: {t.attrs}")
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not any(h.lstrip().startswith(SENTINEL) for h in headings), headings
    assert_safe_text_chars(out)
    rendered = md.render(out)
    assert "<script" not in rendered and "<img" not in rendered  # as text they read &lt;script
    prose = out
    for token in tokens:  # preformatted text (a compiler's error, a stack) keeps its own lines, fenced
        if token.type == "fence":
            prose = prose.replace(token.content, "")
    assert not any(f"{brk}{SENTINEL}" in prose for brk in LINE_STARTS), "a field started a line"


def assert_safe_text_chars(out: str) -> None:
    bad = [c for c in out if c != "\n" and (unicodedata.category(c) in ("Cc", "Cs") or c in BIDI)]
    assert not bad, f"control characters: {bad[:5]!r}"


def assert_junit_parses(out: str) -> ET.Element:
    return ET.fromstring(out.split("\n", 1)[1])


# ---------------------------------------------------------------- hostile documents

@st.composite
def hostile_report(draw, worker: str | None = None) -> Report:
    h = lambda: draw(hostile)  # noqa: E731
    results = []
    shapes = [(Status.FAIL, Step.NODE), (Status.ERROR, Step.GCS), (Status.WARN, Step.RUNTIME), (Status.SKIP, Step.LOGS),
              (Status.PASS, Step.REFERENCE), (Status.FAIL, Step.LOGS)]
    for i, (status, step) in enumerate(shapes):
        evidence = {h(): h(), "log_excerpt": [h(), h()], "traceback": h(), "hbm_used_bytes": draw(
            st.integers(-(2**70), 2**70)), "ratio": draw(st.floats(allow_nan=False, allow_infinity=False)),
            "allocations": [{h(): h(), "size_bytes": draw(st.integers(0, 2**80))}, {"name": h()}]}
        if i == 3:
            evidence["root_skip_reason"] = h()
        results.append(Finding(
            id=f"{h()}-{i}", step=step, title=h(), status=status, message=h(), severity=draw(st.sampled_from(Severity)),
            evidence=evidence, remediation=Remediation(text=h(), commands=(h(), h()), docs_url=draw(
                st.sampled_from(["https://cloud.google.com/tpu/docs", None])) or h()),
            skip_reason=h() if status is Status.SKIP else None, duration_s=0.25,
            scope=Scope.of(workers=[h()], hosts=[h()], chips=[h()]) if i % 2 else Scope()))
    return Report(results=results, target=Target(project=h(), zone=h(), tpu=h(), worker=worker or h()), host=h(),
                  started_at=dt.datetime(2026, 11, 30, 10, 0, tzinfo=dt.timezone.utc), duration_s=1.5,
                  tool_version=h(), environment={"worker": worker or h(), "packages": {h(): h()}})


FORMATS = ("text", "markdown", "html", "junit", "json")
RENDERINGS = settings(max_examples=max(40, settings.default.max_examples // 4))
"""Each example renders every format of a whole report: a quarter of the profile's inputs, at least 40."""


@given(report=hostile_report(), verbose=st.booleans(), fail_on=st.sampled_from(["warn", "fail"]))
@RENDERINGS
def test_check_report_in_every_format(report, verbose, fail_on):
    """Every format of a hostile check report; its JUnit fails exactly the findings its exit status judges."""
    from tpudoctor.findings import Gate, failing_findings
    from tpudoctor.rendering import render

    gate = Gate(fail_on)
    for fmt in FORMATS:
        _assert_format(fmt, render(report.to_dict(), fmt, verbose=verbose, gate=gate))
    suite = assert_junit_parses(render(report.to_dict(), "junit", gate=gate)).find("testsuite")
    assert int(suite.get("failures")) + int(suite.get("errors")) == len(failing_findings(report, gate))
    assert json.loads(render(report.to_dict(), "json")) == json.loads(json.dumps(report.to_dict(), default=str))


@given(data=st.data())
@RENDERINGS
def test_merged_pod_report_in_every_format(data):
    from tpudoctor.pod.merge import merge_outcomes
    from tpudoctor.pod.outcomes import WorkerOutcome, worker_problem
    from tpudoctor.rendering import render

    workers = data.draw(st.lists(hostile, min_size=2, max_size=3, unique=True))
    outcomes = [WorkerOutcome(worker=w, report=data.draw(hostile_report(worker=w)), source=data.draw(hostile))
                for w in workers[:-1]]
    silent = workers[-1]
    outcomes.append(WorkerOutcome(worker=silent, source=data.draw(hostile), problem=worker_problem(
        "POD-007", data.draw(hostile), silent, Status.ERROR, data.draw(hostile), evidence={"source": data.draw(hostile)},
        remediation=Remediation(text=data.draw(hostile), commands=(data.draw(hostile),)))))
    merged = merge_outcomes(outcomes, target=Target(tpu=data.draw(hostile)), source=data.draw(hostile))
    for fmt in FORMATS:
        out = render(merged.to_dict(), fmt, verbose=data.draw(st.booleans()))  # hostile: not schema-valid
        _assert_format(fmt, out)


# ---------------------------------------------------------------- profile reports and compare

@pytest.fixture(scope="module")
def profile_report():
    from pathlib import Path

    from tpudoctor.profile.pipeline import analyze

    return analyze(str(Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "multihost_slow_host"))


def poison_profile(doc: dict, h) -> dict:
    """The fields of a profile document that come from the capture (names of files, hosts, ops, programs,
    functions) or, for a saved report read back, from wherever it was written."""
    doc = copy.deepcopy(doc)
    for key in ("source", "verdict", "verdict_reason", "run"):
        doc[key] = h()
    for key in ("method", "program", "reason"):
        doc["steps"][key] = h()
    hosts = {host["host"]: h() for host in doc.get("hosts", [])}
    for host in doc.get("hosts", []):
        host["host"] = hosts[host["host"]]
        host["verdict"] = h()
    if doc.get("straggler"):
        doc["straggler"]["host"] = hosts.get(doc["straggler"]["host"], h())
    for finding in doc["findings"]:
        finding.update(id=h(), title=h(), message=h())  # severity and status: enumerations a reader checks
        finding["remediation"] = {"text": h(), "commands": [h()], "docs_url": None}
        finding["scope"]["hosts"] = [h(), h()]
    for fn in doc["recompilation"]["functions"]:
        fn.update(function=h(), framework=h())
    for i, op in enumerate(doc["device_ops"]["top_ops"]):
        op.update(name=f"{h()}{i}", category=h())
    for row in doc["host_ops"]["table"]:
        row.update(name=h(), kind=h(), share_of=h())
    for stage in doc["breakdown"]["input_stages"]:
        stage["stage"] = h()
    for i, op in enumerate((doc.get("op_table") or {}).get("ops") or []):
        op.update(op_name=f"{h()}{i}", category=h())
    for op in (doc.get("roofline") or {}).get("ops") or []:
        op.update(op_name=h(), category=h())
    return doc


@given(data=st.data())
@RENDERINGS
def test_profile_report_in_every_format(profile_report, data):
    from tpudoctor.rendering import render

    h = lambda: data.draw(hostile)  # noqa: E731
    doc = poison_profile(profile_report.to_dict(), h)
    summary = profile_report.summary
    hosts = [dataclasses.replace(host, hostname=h(), device_kind=h(), planes=[dataclasses.replace(
        plane, plane_name=h(), device_kind=h(), lines=[dataclasses.replace(line, line_name=h()) for line in plane.lines])
        for plane in host.planes]) for host in summary.hosts]
    summary = dataclasses.replace(summary, source=h(), run=h(), runs_available=[h(), h()], device_kinds=[h()],
                                  hosts=hosts, notes=[h()], failed_hosts={h(): h()})
    doc["summary"] = summary.to_dict()
    whole = _poison_strings(profile_report.to_dict(), _pool(data))  # every string: the what-if's hosts, the peaks
    for shown in (doc, whole):
        for fmt in FORMATS:
            _assert_format(fmt, render(shown, fmt, verbose=data.draw(st.booleans())))


def test_every_kind_is_fuzzed_in_every_format():
    """Each kind ``render`` knows has a test above that draws it hostile in every format (FORMATS): a kind added
    without one fails here."""
    from tpudoctor.rendering import EMITTERS, VIEWS

    fuzzed = {"check": test_check_report_in_every_format, "merged": test_merged_pod_report_in_every_format,
              "profile": test_profile_report_in_every_format, "hang": test_hang_report_in_every_format,
              "goodput": test_goodput_report_in_every_format, "diag": test_diag_report_in_every_format,
              "bench": test_bench_report_in_every_format, "memory": test_memory_and_preflight_reports_in_every_format,
              "memory-preflight": test_memory_and_preflight_reports_in_every_format,
              "pipeline_whatif": test_op_trace_whatif_in_every_format,
              "tpudoctor.profile_compare": test_compare_output_in_every_format,
              "tpudoctor.profile_history": test_compare_output_in_every_format,
              "tpudoctor.goodput_compare": test_goodput_comparison_in_every_format}
    assert {*VIEWS, "merged"} == set(fuzzed)
    assert set(FORMATS) == {"json", *EMITTERS}


@given(data=st.data())
@RENDERINGS
def test_compare_output_in_every_format(real_report, data):
    from tpudoctor.profile.compare import compare
    from tpudoctor.profile.history import judge_history
    from tpudoctor.rendering import render

    h = lambda: data.draw(hostile)  # noqa: E731
    a, b = poison_profile(real_report, h), poison_profile(real_report, h)
    for doc in (a, b):
        doc["device"], doc["framework"] = h(), h()
        doc["versions"] = {k: h() for k in doc.get("versions") or {"framework": ""}}
    b["kpis"]["step_time_mean_ms"] = (a["kpis"]["step_time_mean_ms"] or 1.0) * 1.3
    result = compare(a, b, threshold_percent=5.0)
    result["forced"] = data.draw(st.booleans())
    history = {"kind": "tpudoctor.profile_history", "history": h(), "candidate": {"source": h(), "verdict": h()},
               "comparable": result["comparable"], "comparability": result["comparability"], "forced": False,
               "gate": judge_history([a, a, a, a, a], b, history_names=[h() for _ in range(5)]).to_dict()}
    for shown in (result, history):
        for fmt in FORMATS:
            out = render(shown, fmt)
            _assert_format(fmt, out)
            if fmt == "json":
                assert json.loads(out) == json.loads(json.dumps(shown))


def _assert_format(fmt: str, out: str) -> None:
    if fmt == "text":
        assert_safe_text(out)
    elif fmt == "markdown":
        assert_safe_markdown(out)
    elif fmt == "html":
        assert_safe_html(out)
    elif fmt == "junit":
        assert_junit_parses(out)
    else:
        assert json.dumps(json.loads(out), indent=2) + "\n" == out


@given(reports=st.lists(report_inputs, min_size=1, max_size=3), fmt=st.sampled_from(FORMATS))
@RENDERINGS
def test_merge_of_damaged_and_hostile_reports(tmp_path_factory, reports, fmt):
    """``tpudoctor merge`` of saved reports, each damaged or hostile: the merged report in any format, or
    the documented error; never another exception, never unsafe output."""
    from tpudoctor.documents import merged_document
    from tpudoctor.errors import InputError
    from tpudoctor.pod.merge import merge_outcomes
    from tpudoctor.pod.report_store import read_reports
    from tpudoctor.rendering import render

    folder = tmp_path_factory.mktemp("run")
    for i, data in enumerate(reports):
        (folder / f"{i}.json").write_bytes(data)
    with time_bound():
        try:
            merged = merge_outcomes(read_reports([str(folder)]), source=str(folder))
        except InputError as exc:
            assert exc.message
            return
        _assert_format(fmt, render(merged_document(merged, redact=False), fmt))


# ---------------------------------------------------------------- diag and bench documents

DOCUMENTS = Path(__file__).resolve().parents[1] / "data" / "documents"


@given(data=st.data())
@RENDERINGS
def test_diag_report_in_every_format(data):
    """Every string of a saved diag document (a -r 2 run on 4 CPU devices with injected faults: chips, hosts,
    findings, fault words, the backend) hostile."""
    from tpudoctor.rendering import render

    clean = json.loads((DOCUMENTS / "diag_r2_cpu_injected.json").read_text(encoding="utf-8"))
    doc = _poison_strings(clean, _pool(data))
    for fmt in FORMATS:
        _assert_format(fmt, render(doc, fmt, verbose=data.draw(st.booleans())))


@given(data=st.data())
@RENDERINGS
def test_bench_report_in_every_format(data):
    from tpudoctor.rendering import render

    clean = json.loads((DOCUMENTS / "bench_dense_cpu_vs_baseline.json").read_text(encoding="utf-8"))
    doc = _poison_strings(clean, _pool(data))
    for fmt in FORMATS:
        _assert_format(fmt, render(doc, fmt, verbose=data.draw(st.booleans())))


# ---------------------------------------------------------------- hang and goodput reports

HANG_CAPTURE = Path(__file__).resolve().parents[1] / "data" / "hang" / "checkpoint"
GOODPUT_LOG = Path(__file__).resolve().parents[1] / "fixtures" / "goodput" / "maxtext_restart.log"


def _pool(data):
    """A few hostile strings, drawn once, handed out in turn to the many fields of a whole document."""
    pool = data.draw(st.lists(hostile, min_size=3, max_size=8))
    turn = iter(range(1 << 30))
    return lambda: pool[next(turn) % len(pool)]


def _hostile_frames(frames, h):
    return [dataclasses.replace(f, function=h(), file=f"/{h()}/{h()}.py", code=h() if f.code else None)
            for f in frames]


@given(data=st.data())
@RENDERINGS
def test_hang_report_in_every_format(data):
    """Hostile names where a live job puts them: frame functions and files, thread names, the host, the worker,
    the command line and the log lines a capture read."""
    from tpudoctor.documents import prepare
    from tpudoctor.hang.analyze import analyze
    from tpudoctor.hang.capture import read_dump_dir
    from tpudoctor.rendering import render

    h = _pool(data)
    capture = read_dump_dir(str(HANG_CAPTURE))
    captures = []
    for c in capture.captures:
        samples = [dataclasses.replace(s, threads=[dataclasses.replace(t, name=h(), frames=_hostile_frames(t.frames, h))
                                                   for t in s.threads]) for s in c.samples]
        steps = [dataclasses.replace(r, source=h(), line=h()) for r in c.steps]
        captures.append(dataclasses.replace(c, samples=samples, steps=steps, cmdline=h(), host=h(), worker=h()))
    report = analyze(captures, target=Target(tpu=h(), project=h(), zone=h()), host=h(), started_at=capture.started_at,
                     interval_s=capture.interval_s, samples=capture.samples, digests=[], environment={h(): h()})
    for fmt in FORMATS:
        _assert_format(fmt, render(prepare(report, redact=False), fmt, verbose=data.draw(st.booleans())))


KEEP = {"status", "severity", "kind", "bucket", "created_at", "wall_start", "wall_end", "schema_version", "verdict",
        "level"}  # enumerations a reader checks (a confidence level), not text


def _poison_strings(value, h, key=None):
    if isinstance(value, dict):
        return {k: _poison_strings(v, h, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_poison_strings(v, h, key) for v in value]
    return h() if isinstance(value, str) and key not in KEEP else value


@given(data=st.data())
@RENDERINGS
def test_goodput_report_in_every_format(data):
    """Every string of a goodput document read back (a saved report: sources, notes, the log lines that began
    and ended each start, the bands of each start, findings, the --min-ettr verdict) hostile."""
    from tpudoctor.findings import Gate
    from tpudoctor.goodput.analyze import analyze_paths
    from tpudoctor.rendering import render

    clean = analyze_paths([str(GOODPUT_LOG)], min_ettr=data.draw(st.sampled_from([None, 0.2, 0.5])))
    doc = _poison_strings(clean, _pool(data))
    for fmt in FORMATS:
        _assert_format(fmt, render(doc, fmt, verbose=data.draw(st.booleans()), gate=Gate(fail_on=None)))


@given(data=st.data())
@RENDERINGS
def test_goodput_comparison_in_every_format(data):
    from tpudoctor.goodput.analyze import analyze_paths
    from tpudoctor.goodput.compare import compare_goodput
    from tpudoctor.rendering import render

    clean = analyze_paths([str(GOODPUT_LOG)])
    result = compare_goodput(_poison_strings(clean, _pool(data)), _poison_strings(clean, _pool(data)))
    for fmt in FORMATS:
        _assert_format(fmt, render(result, fmt))


# ---------------------------------------------------------------- memory, its preflight, and the op-trace what-if

MEMORY_INPUTS = [Path(__file__).resolve().parents[1] / "data" / "memory" / name
                 for name in ("easydel_166_compile_hbm_report.log", "trax_431_runtime_allocate_fragmentation.log")]


@pytest.fixture(scope="module")
def memory_document():
    """A real memory document: two OOM logs and, where the reference data is here, a TPU capture (allocators,
    buffers, programs with fixes, the chips across the pod)."""
    from shared_data import SHARED_DATA

    from tpudoctor.documents import prepare
    from tpudoctor.memory.pipeline import analyze

    capture = SHARED_DATA / "xprof_tpu_inference_2.xplane.pb"
    paths = [str(p) for p in (*MEMORY_INPUTS, capture) if p.is_file()]
    return prepare(analyze(paths), redact=False)


@pytest.mark.parametrize("name", ["memory", "memory_preflight_mlp_adam_v5e.json"])
@given(data=st.data())
@RENDERINGS
def test_memory_and_preflight_reports_in_every_format(memory_document, name, data):
    """Every string of a memory document (log paths, op names, shapes, allocator and program names, fix titles)
    and of a preflight document (the program, the compiler's error, buffers' ops and source lines, fixes) hostile."""
    from tpudoctor.rendering import render

    clean = memory_document if name == "memory" else json.loads((DOCUMENTS / name).read_text(encoding="utf-8"))
    doc = _poison_strings(clean, _pool(data))
    for fmt in FORMATS:
        _assert_format(fmt, render(doc, fmt, verbose=data.draw(st.booleans())))


@given(data=st.data())
@RENDERINGS
def test_op_trace_whatif_in_every_format(whatif_document, data):
    """ByteDance's trace-ST what-if document with every string hostile: the source path, op types, causes, time
    classes."""
    from tpudoctor.rendering import render

    doc = _poison_strings(whatif_document, _pool(data))
    for fmt in FORMATS:
        _assert_format(fmt, render(doc, fmt))


@pytest.fixture(scope="module")
def whatif_document():
    from shared_data import SHARED_DATA

    from tpudoctor.documents import prepare
    from tpudoctor.profile.op_trace_report import analyze_op_trace

    trace = SHARED_DATA / "bytedance_straggler" / "trace-ST.parquet"
    if not trace.is_file():
        pytest.skip("ByteDance's straggler traces (../shared/data/bytedance_straggler) are absent")
    return prepare(analyze_op_trace(trace), redact=False)
