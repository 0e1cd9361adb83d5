"""Saved report readers (check report, bench baseline, profile report): any file gives the document or
an InputError naming the file, never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutations import flip_bytes, time_bound, truncate
from sample_reports import preempted_node_report

from tpudoctor.errors import InputError
from tpudoctor.findings import Report
from tpudoctor.report_file import load_check_report

VALID = json.dumps(preempted_node_report().to_dict(), indent=1).encode()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def _replace_field(doc, path: list, value):
    """``doc`` with the value at a (wrapped) path replaced: a report with one wrong-typed field."""
    node = doc
    for step in path[:-1]:
        if isinstance(node, dict) and node:
            node = node[sorted(node)[step % len(node)]]
        elif isinstance(node, list) and node:
            node = node[step % len(node)]
    if isinstance(node, dict) and node:
        node[sorted(node)[path[-1] % len(node)]] = value
    elif isinstance(node, list) and node:
        node[path[-1] % len(node)] = value
    return doc


def _with_token(doc, path: list, token: str) -> bytes:
    """A report with one value replaced by a raw JSON token (NaN, Infinity, 1e400) no writer of JSON emits."""
    return json.dumps(_replace_field(doc, path, "\x00TOKEN\x00")).replace('"\\u0000TOKEN\\u0000"', token).encode()


def _repeated_result(times: int) -> bytes:
    doc = json.loads(VALID)
    doc["results"] += [doc["results"][-1]] * times
    return json.dumps(doc).encode()


HOSTILE_TOKENS = ["NaN", "Infinity", "-Infinity", "1e308", "-1e308", "1e400", "9" * 5000, '"9999-12-31T23:59:59+00:00"',
                  '"2026-11-30T10:00:00"', '"\\u001b]0;x\\u0007"', '"\\ud800"', "-0.0", "1e-320"]

inputs = st.one_of(
    st.binary(max_size=300),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=8)
    .map(lambda e: flip_bytes(VALID, e)),
    st.floats(0, 1).map(lambda f: truncate(VALID, f)),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.tuples(st.lists(st.integers(0, 50), min_size=1, max_size=4), json_values)
    .map(lambda t: json.dumps(_replace_field(json.loads(VALID), *t)).encode()),
    st.integers(1, 100_000).map(lambda n: b"[" * n + b"]" * n),
    # numbers JSON Schema cannot refuse, times that cannot be placed, ids repeated (issue: hostile inputs)
    st.tuples(st.lists(st.integers(0, 50), min_size=1, max_size=4), st.sampled_from(HOSTILE_TOKENS))
    .map(lambda t: _with_token(json.loads(VALID), *t)),
    st.sampled_from(["duration_s", "started_at"]).flatmap(lambda key: st.sampled_from(HOSTILE_TOKENS).map(
        lambda token: VALID.replace(f'"{key}": '.encode(), f'"{key}": {token}, "was": '.encode(), 1))),
    st.integers(1, 2000).map(_repeated_result),
)


def _load_profile_report(path):
    from tpudoctor.profile.compare import load_document

    return load_document(str(path))


def _load_baseline(path):
    from tpudoctor.bench.document import load_baseline

    return load_baseline(path)


def _load_worker_report(path):
    from tpudoctor.pod.documents import report_from_bytes

    return report_from_bytes(path.read_bytes(), str(path))[0]


def _load_worker_output(path):
    """A worker's stdout during a fan-out: whatever it printed, the report is found or the worker named."""
    from tpudoctor.pod.documents import report_from_output

    return report_from_output(path.read_bytes().decode("utf-8", errors="replace"), str(path))[0]


# Every saved-document reader goes through tpudoctor.report_file.read_document (the per-worker readers of
# merge and fan-out validate against the same schema); each is fuzzed here.
READERS = {
    "check report": (load_check_report, Report),
    "worker report (merge)": (_load_worker_report, Report),
    "worker output (fan-out)": (_load_worker_output, Report),
    "bench baseline": (_load_baseline, dict),
    "profile report": (_load_profile_report, dict),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@given(data=inputs)
def test_saved_document_readers(tmp_path_factory, reader, data):
    load, result_type = READERS[reader]
    path = tmp_path_factory.mktemp("r") / "report.json"
    path.write_bytes(data)
    with time_bound():
        try:
            loaded = load(path)
        except InputError as exc:
            assert str(path) in exc.message
        else:
            assert isinstance(loaded, result_type)


def test_check_report_round_trips(tmp_path):
    path = tmp_path / "report.json"
    path.write_bytes(VALID)
    report = load_check_report(path)
    assert report.to_dict()["results"] == json.loads(VALID)["results"]


@pytest.mark.parametrize("content, words", [
    (b"", "not valid JSON"), (b"\xff\xfe", "not UTF-8"), (b"[]", "top level is a list"),
    (b'{"schema_version": 5}', "schema_version 5"), (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),
])
def test_check_report_reader_names_the_problem(tmp_path, content, words):
    path = tmp_path / "report.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=words):
        load_check_report(path)


def test_missing_check_report(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_check_report(tmp_path / "nope.json")


@pytest.mark.parametrize("content, words", [
    (b"\x80", "not UTF-8"),  # was UnicodeDecodeError (found by the fuzzer)
    (b'{"schema_version": 5}', "schema_version 5"),  # was AttributeError: int has no split
    (b"[" * 100_000 + b"]" * 100_000, "nests too deeply"),  # was RecursionError
])
def test_bench_baseline_reader_regressions(tmp_path, content, words):
    from tpudoctor.bench.document import load_baseline

    path = tmp_path / "baseline.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=words):
        load_baseline(path)
