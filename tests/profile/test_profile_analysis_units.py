"""Interval helpers on small columnar inputs, multi-host captures that never synchronise, and bad inputs."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from hand_hosts import host_of, line_sorted
from paths import TESTS

import tpudoctor.profile
from tpudoctor.cli import main
from tpudoctor.profile.analysis.intervals import merged, overlap_ps, union_ps
from tpudoctor.profile.analysis.nesting import outermost, self_time_ps

FIXTURES = TESTS / "fixtures" / "profiles"


def test_self_time_subtracts_direct_children_only():
    frame = pd.DataFrame({"plane_id": [0] * 5 + [1] * 2, "line_id": [1] * 7,
                          "start_ps": [0, 10, 20, 25, 100, 0, 50], "duration_ps": [50, 5, 20, 3, 10, 40, 10]})
    # 0..50 holds 10..15 and 20..40 (which holds 25..28); plane 1 is a separate, flat line.
    assert self_time_ps(frame).tolist() == [25, 5, 17, 3, 10, 40, 10]


def _stack_walk_self_time(plane, line, start, duration) -> np.ndarray:
    """Self time by the plain stack walk over each line: what the vectorised parent search must equal."""
    order = np.lexsort((-duration, start, line, plane))
    out = duration.astype(np.int64).copy()
    stack: list[int] = []
    last = None
    for i in order:
        key, end = (plane[i], line[i]), start[i] + duration[i]
        if key != last:
            stack, last = [], key
        while stack and (start[stack[-1]] + duration[stack[-1]] < end or start[i] >= start[stack[-1]] + duration[stack[-1]]):
            stack.pop()
        if stack:
            out[stack[-1]] -= duration[i]
        stack.append(i)
    return np.maximum(out, 0)


def test_self_time_equals_a_stack_walk_for_any_nesting():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        # nested, partly overlapping, zero-length and tied events on a few lines, in any order
        frame = pd.DataFrame({"plane_id": rng.integers(0, 3, n).astype(np.int32), "line_id": rng.integers(0, 4, n),
                              "start_ps": rng.integers(0, 200, n), "duration_ps": rng.integers(0, 60, n)})
        expected = _stack_walk_self_time(*(frame[c].to_numpy() for c in ("plane_id", "line_id", "start_ps", "duration_ps")))
        assert self_time_ps(frame).tolist() == expected.tolist()


@pytest.mark.needs_shared_data
def test_tpu_op_times_and_self_time_equal_a_stack_walk(shared_data, monkeypatch):
    from tpudoctor.captures.xspace import decode_host_file
    from tpudoctor.profile.analysis import device_op_rows
    from tpudoctor.profile.analysis.device_op_rows import device_ops

    path = shared_data / "xprof_tpu_inference_2.xplane.pb"
    host = decode_host_file(str(path), hostname="h", source=str(path))
    ops = device_ops(host)
    assert len(ops) > 1000
    expected = _stack_walk_self_time(host.line_values("plane_id", ops.rows), host.line_values("line_id", ops.rows),
                                     ops.start_ps, ops.duration_ps)
    assert ops.self_ps.tolist() == expected.tolist()
    monkeypatch.setattr(device_op_rows, "OP_CHUNK", 500)  # the times worked out a few lines at a time are the same
    pieces = device_ops(host)
    for times in ("start_ps", "duration_ps", "self_ps"):
        assert getattr(pieces, times).tolist() == getattr(ops, times).tolist(), times


@pytest.mark.needs_shared_data
def test_tpu_ops_read_from_whole_lines_equal_the_ops_selected_row_by_row(shared_data, tmp_path, monkeypatch):
    """The real v6e capture joined 3 times (its planes repeat, as a big capture's do): the ops read from the lines
    table's whole ``XLA Ops`` lines, as slices, are the rows, cores, device-clock times and self times that a
    selection of every event by its line and plane names gives; and so are the columns read at the ops."""
    from tpudoctor.captures.xspace import decode_host_file
    from tpudoctor.profile.analysis import device_op_rows
    from tpudoctor.profile.analysis.device_op_rows import _select_device_ops
    from tpudoctor.profile.analysis.events import line_rows, module_rows

    joined = tmp_path / "host.xplane.pb"
    joined.write_bytes((shared_data / "xprof_tpu_inference_2.xplane.pb").read_bytes() * 3)
    host = decode_host_file(str(joined), hostname="h", source=str(joined))
    from_lines = _select_device_ops(host)
    assert from_lines.spans is not None and len(from_lines.spans[0]) == 12
    monkeypatch.setattr(device_op_rows, "_tpu_op_lines", lambda host: None)
    row_by_row = _select_device_ops(host)
    assert row_by_row.spans is None and len(row_by_row) == 3 * 6013
    for name in ("rows", "core", "core_names", "start_ps", "duration_ps", "self_ps"):
        expected, found = getattr(row_by_row, name), getattr(from_lines, name)
        assert found.dtype == expected.dtype and found.tolist() == expected.tolist(), name
    # nothing nests on its XLA Ops lines: the self times are the durations themselves, both ways
    assert from_lines.self_ps is from_lines.duration_ps and row_by_row.self_ps is row_by_row.duration_ps
    for name in ("name", "hlo_category", "line_name"):
        assert from_lines.coded(name).codes.tolist() == row_by_row.coded(name).codes.tolist(), name
    for name in ("program_id", "hlo_category"):
        (codes, values), (expected_codes, expected_values) = from_lines.factorized(name), row_by_row.factorized(name)
        assert codes.tolist() == expected_codes.tolist() and [str(v) for v in values] == [str(v) for v in expected_values]
    for name in ("flops", "bytes_accessed", "model_flops"):  # metadata stats, through each op's metadata row
        rows = from_lines.metadata_rows()
        assert from_lines.numbers(name, rows).tolist() == row_by_row.numbers(name).tolist(), name
        assert from_lines.whole_numbers(name, rows).tolist() == row_by_row.whole_numbers(name).tolist(), name
    # each event's line's names, as every event of a line carries them in the file
    line_name = np.repeat(host.lines["line_name"].to_numpy(object), host.lines["n_events"].to_numpy())
    plane_name = host.planes["plane_name"].to_numpy(object)[
        np.repeat(host.lines["plane_id"].to_numpy(), host.lines["n_events"].to_numpy())]
    assert module_rows(host).tolist() == np.flatnonzero(line_name == "XLA Modules").tolist()
    assert line_rows(host, "Steps", lambda plane: plane == "/device:TPU:1").tolist() == np.flatnonzero(
        (line_name == "Steps") & (plane_name == "/device:TPU:1")).tolist()


def test_sums_by_metadata_row_equal_the_group_sums_of_the_ops_values():
    """Group sums and totals worked out per metadata row (how many ops of each group have it) are what
    ``Groups.sums``/``float_total``/``np.nansum`` give over the ops' own values: exact below 2**53, pandas' sums of
    the ops of the groups (and the total) past it, NaN skipped; None where some row's ops are of two groups."""
    from tpudoctor.profile.analysis.grouping import Groups, SumsByRow, float_total

    rng = np.random.default_rng(11)
    n_rows, n = 300, 20000
    group_of_row = rng.integers(0, 40, n_rows)
    row = rng.integers(-1, n_rows, n).astype(np.int32)
    a = np.where(row >= 0, group_of_row[row] // 8, 99)  # ops without a row: a group of their own
    b = np.where(row >= 0, group_of_row[row] % 8, 99)
    groups = Groups(a, b)
    by_row = SumsByRow.of(groups, row, n_rows)
    assert by_row is not None
    for per_row, missing in ((rng.integers(0, 10**6, n_rows), 0),                      # small whole numbers
                             (np.where(group_of_row == 3, 2**50 + 3, 7).astype(np.int64), 0),  # group 3 passes 2**53
                             (rng.integers(0, 10**4, n_rows).astype(np.float64), 0.0),
                             (np.where(rng.random(n_rows) < 0.2, np.nan, 2.0**45 * rng.integers(1, 9, n_rows)), np.nan)):
        values = np.append(per_row, np.asarray([missing], per_row.dtype))[row]
        sums, total = by_row.sums_and_total(per_row, missing=missing, nan_total=bool(np.isnan(missing)))
        assert sums.tolist() == groups.sums(values).tolist()
        assert total == (float(np.nansum(values)) if np.isnan(missing) else float_total(values))
    assert by_row.sums_and_total(rng.random(n_rows)) is None  # not whole numbers: the ops' own sums
    assert SumsByRow.of(Groups(rng.integers(0, 5, n)), row, n_rows) is None  # a row's ops in several groups


def test_enclosing_names_equal_a_search_of_each_childs_line():
    """The innermost parent of each child (latest start that contains it on its line; the first of parents
    starting together) is what a search of the child's own line finds, for nesting deeper than the rounds that
    search all children together."""
    from tpudoctor.profile.analysis.recompilation import ENCLOSING_ROUNDS, _enclosing_names

    rng = np.random.default_rng(4)
    n = 3000
    frame = pd.DataFrame({"plane_id": rng.integers(0, 2, n), "line_id": rng.integers(0, 3, n),
                          "name": pd.Categorical(rng.choice(["f", "g", "h"], n)),
                          "start_ps": rng.integers(0, 400, n), "duration_ps": rng.integers(0, 300, n)})
    frame.loc[:60, ["plane_id", "line_id", "start_ps", "duration_ps"]] = [1, 1, 0, 10**6]  # deep, tied nesting
    frame = line_sorted(frame)  # stored line after line, as a capture's events are
    parents, children = np.flatnonzero(rng.random(n) < 0.5), np.arange(n)
    ends = frame["start_ps"] + frame["duration_ps"]
    expected = []
    for child in children:
        same = parents[(frame["plane_id"].to_numpy()[parents] == frame["plane_id"][child])
                       & (frame["line_id"].to_numpy()[parents] == frame["line_id"][child])]
        inside = same[(frame["start_ps"].to_numpy()[same] <= frame["start_ps"][child])
                      & (ends.to_numpy()[same] >= ends[child])]
        if not len(inside):
            expected.append(None)
            continue
        order = inside[np.lexsort((frame["start_ps"].to_numpy()[inside],))]
        latest = order[frame["start_ps"].to_numpy()[order] == frame["start_ps"].to_numpy()[order].max()][0]
        expected.append(str(frame["name"][latest]))
    assert ENCLOSING_ROUNDS < 60
    assert _enclosing_names(host_of(frame), children, parents) == expected


def test_groups_count_and_sum_as_a_pandas_group_by():
    from tpudoctor.profile.analysis.grouping import Groups

    rng = np.random.default_rng(3)
    a, b = rng.integers(-1, 5, 5000), rng.integers(0, 7, 5000)
    for values in (rng.integers(0, 10**6, 5000),                    # whole numbers: summed by bincount
                   rng.random(5000) * 1e3,                            # fractions: pandas' own sum
                   np.where(rng.random(5000) < 0.3, np.nan, 2.0**50 * rng.random(5000).round(3)),  # NaN, huge
                   # whole numbers whose sum passes 2**53 in the groups of a == 4 only: those by pandas' sum
                   np.where(a == 4, rng.integers(2**48, 2**50, 5000) * 3 + 1, rng.integers(0, 10**6, 5000))):
        groups = Groups(a, b)
        frame = pd.DataFrame({"a": np.where(a < 0, np.nan, a), "b": b, "v": values.astype(np.float64)})
        expected = frame.groupby(["a", "b"], sort=False)["v"].agg(["size", "sum"])
        first = groups.first_row
        assert list(zip(a[first].astype(float), b[first], strict=True)) == list(expected.index)
        assert groups.counts().tolist() == expected["size"].tolist()
        assert groups.sums(values).tolist() == expected["sum"].tolist()


def test_outermost_rows_equal_outermost_with_and_without_names():
    from tpudoctor.profile.analysis.nesting import outermost_rows

    rng = np.random.default_rng(5)
    for named in (True, False):
        n = 400
        names = rng.choice(["b", "a", "c"] + ([] if named else [None]), n)
        frame = pd.DataFrame({"plane_id": rng.integers(0, 2, n), "line_id": rng.integers(0, 3, n),
                              "name": pd.Categorical(names, categories=["c", "a", "b"]),
                              "start_ps": rng.integers(0, 500, n), "duration_ps": rng.integers(0, 80, n)})
        frame = line_sorted(frame)
        rows = np.flatnonzero(rng.random(n) < 0.7)
        assert outermost_rows(host_of(frame), rows).tolist() == outermost(frame.iloc[rows]).index.tolist()


def test_union_merge_and_window_overlap():
    starts, ends = np.array([0, 5, 20, 22]), np.array([10, 12, 25, 30])
    assert union_ps(starts, ends) == 12 + 10
    ms, me = merged(starts, ends)
    assert ms.tolist() == [0, 20] and me.tolist() == [12, 30]
    windows = overlap_ps(starts, ends, np.array([0, 11, 26, 40]), np.array([11, 21, 40, 50]))
    assert windows.tolist() == [11, 2, 4, 0]


def test_outermost_drops_same_name_nesting():
    frame = pd.DataFrame({"plane_id": [0, 0, 0, 0], "line_id": [1, 1, 1, 1],
                          "name": ["PjitFunction(f)", "PjitFunction(f)", "PjitFunction(g)", "PjitFunction(f)"],
                          "start_ps": [0, 1, 2, 20], "duration_ps": [10, 5, 3, 5]})
    kept = outermost(frame)
    assert kept["start_ps"].tolist() == [0, 2, 20]


def test_unrelated_captures_in_one_run_name_no_straggler(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    # Two "hosts" that never synchronise: a slower mean step is no straggler (nobody waits for it).
    shutil.copyfile(FIXTURES / "jax_compute_bound" / "localhost.xplane.pb", run / "worker-0.xplane.pb")
    shutil.copyfile(FIXTURES / "jax_recompiling" / "localhost.xplane.pb", run / "worker-1.xplane.pb")
    report = tpudoctor.profile.analyze(str(tmp_path))
    doc = report.to_dict()
    assert {h["host"] for h in doc["hosts"]} == {"worker-0", "worker-1"}
    assert doc["straggler"] is None
    assert "no host waits for another" in report.cross_host.straggler.decided_by


def test_profile_analyze_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "empty.xplane.pb"
    bad.write_bytes(b"")
    assert main(["profile", "analyze", str(bad), "--format", "html"]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_compare_formats(tmp_path, capsys, fmt):
    a = tmp_path / "a.json"
    assert main(["profile", "analyze", str(FIXTURES / "tf_input_bound"), "--format", "json", "-o", str(a)]) == 1  # its FAIL findings
    capsys.readouterr()
    assert main(["compare", str(a), str(FIXTURES / "tf_compute_bound"), "--format", fmt]) == 0  # no gate: exit 0
    out = capsys.readouterr().out
    assert "input_percent" in out and ("better" in out)


@pytest.mark.parametrize("threshold", ["nan%", "nan", "NaN%", "inf%", "-inf%", "infinity", "-5%", "-0.1"])
def test_compare_gate_threshold_that_would_turn_the_gate_off_is_a_usage_error(tmp_path, capsys, threshold):
    a = tmp_path / "a.json"
    assert main(["profile", "analyze", str(FIXTURES / "jax_steady"), "--format", "json", "-o", str(a)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(a), f"--fail-on-regression={threshold}"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on-regression" in err and "Traceback" not in err


V1_REPORT = TESTS / "data" / "profile" / "report_v1_tf_input_bound.json"


def test_compare_reads_a_schema_1_report_saved_by_the_previous_version(tmp_path, capsys):
    """``report_v1_tf_input_bound.json`` was written by ``profile analyze --format json`` before 2.0."""
    import json

    from tpudoctor.profile.compare import load_document
    from tpudoctor.profile.document import SCHEMA_VERSION
    from tpudoctor.schema import validate

    assert json.loads(V1_REPORT.read_text())["schema_version"] == "1.0"
    doc = load_document(str(V1_REPORT))
    assert doc["schema_version"] == SCHEMA_VERSION == "2.3"  # upgraded to the current version
    finding = doc["findings"][0]
    assert finding["id"] == "input-bound" and finding["kind"] == "profile" and finding["status"] == "FAIL"
    assert "prefetch" in finding["remediation"]["text"] and finding["scope"]["hosts"] == []
    validate(doc, "profile_diagnosis")
    new = tmp_path / "new.json"
    assert main(["profile", "analyze", str(FIXTURES / "tf_input_bound"), "--format", "json", "-o", str(new)]) == 1  # its FAIL findings
    capsys.readouterr()
    assert main(["compare", str(V1_REPORT), str(new), "--format", "json", "--fail-on-regression", "50%"]) == 0
    result = json.loads(capsys.readouterr().out)
    same = {row["kpi"]: row["direction"] for row in result["kpis"]}
    assert same["step_time_mean_ms"] == "same" and same["input_percent"] == "same"


def test_text_matching_decides_per_category_as_the_row_by_row_text_would():
    from tpudoctor.profile.analysis.events import mask, text_equals, text_in

    values = ["infeed", None, "copy-start", "nan", "infeed", None, "outfeed"]
    series = pd.Series(pd.Categorical(values, categories=["outfeed", "nan", "copy-start", "infeed", "unused"]))
    for wanted in ("infeed", "nan", "unused", "absent"):
        assert text_equals(series, wanted).tolist() == mask(series.astype(str) == wanted).tolist(), wanted
    for wanted in ({"infeed", "outfeed"}, {"nan"}, set()):
        assert text_in(series, wanted).tolist() == mask(series.astype("string").isin(wanted)).tolist(), wanted
    plain = pd.Series(values, dtype=object)  # a column the capture lacks is all-missing objects
    assert text_in(plain, {"infeed"}).tolist() == [True, False, False, False, True, False, False]


def test_line_timestamps_per_plane_equal_a_join_on_plane_and_line():
    from tpudoctor.profile.analysis.device_op_rows import _line_timestamps_ns

    lines = pd.DataFrame({"plane_id": [0, 0, 1, 1, 2], "line_id": [7, 3, 3, 1 << 40, 5],
                          "timestamp_ns": [100, 200, 300, 400, 500]})
    # ops out of plane order, one on a line that is not in the table
    ops = pd.DataFrame({"plane_id": [1, 0, 2, 0, 1, 2, 1], "line_id": [1 << 40, 3, 5, 7, 3, 9, 3]})
    joined = ops.merge(lines, on=["plane_id", "line_id"], how="left")["timestamp_ns"].fillna(-1).astype(np.int64)
    assert _line_timestamps_ns(lines, ops["plane_id"], ops["line_id"], -1).tolist() == joined.tolist() == [
        400, 200, 500, 100, 300, -1, 300]
    ordered = ops.sort_values("plane_id", kind="stable")
    assert _line_timestamps_ns(lines, ordered["plane_id"], ordered["line_id"], -1).tolist() == joined[ordered.index].tolist()


def test_decoder_row_lookup_matches_a_dictionary_whatever_the_item_order():
    from tpudoctor.captures.xspace.lookup import gather as _gather
    from tpudoctor.captures.xspace.lookup import lookup_rows as _lookup_rows

    ids_per_plane = [np.array([2, 5, 9]), np.array([], np.int64), np.array([1, 5])]
    offsets = [0, 3, 3]
    table = {(0, 2): 0, (0, 5): 1, (0, 9): 2, (2, 1): 3, (2, 5): 4}
    planes = np.array([2, 0, 0, 1, 2, 0, 2], dtype=np.int32)
    ids = np.array([5, 9, 4, 5, 1, 2, 7], dtype=np.int64)
    expected = [table.get((int(p), int(i)), -1) for p, i in zip(planes, ids, strict=True)]
    assert _lookup_rows(planes, ids, ids_per_plane, offsets).tolist() == expected
    order = np.argsort(planes, kind="stable")
    assert _lookup_rows(planes[order], ids[order], ids_per_plane, offsets).tolist() == [expected[i] for i in order]
    codes = np.array([10, 11, 12, 13, 14])
    rows = np.array(expected, dtype=np.int32)
    assert _gather(codes, rows).tolist() == [codes[r] if r >= 0 else -1 for r in expected]


def test_dominant_program_by_category_equals_grouping_the_names_as_text():
    from tpudoctor.profile.analysis.steps import dominant_program

    names = ["b(1)", None, "a(2)", None, None, "b(1)", "a(2)", "c(3)"]
    durations = [5, 100, 4, 100, 100, 5, 6, 50]
    runs = pd.DataFrame({"name": pd.Categorical(names, categories=["c(3)", "b(1)", "a(2)", "z(9)"]),
                         "duration_ps": durations})
    as_text = pd.DataFrame({"name": pd.Series(names, dtype=object), "duration_ps": durations})
    assert dominant_program(runs) == dominant_program(as_text) == "a(2)"  # missing names are no program
    tie = runs.assign(duration_ps=[5, 0, 5, 0, 0, 5, 5, 0])
    assert dominant_program(tie) == dominant_program(tie.assign(name=tie["name"].astype(object))) == "a(2)"


@pytest.mark.parametrize("max_width", [64, 2, 0])  # gaps as table rows, as tuples, and both
def test_most_common_gap_between_runs_counts_as_the_tuples_of_names_would(monkeypatch, max_width):
    from tpudoctor.profile.analysis import steps
    from tpudoctor.profile.analysis.steps import _most_common_gap

    monkeypatch.setattr(steps, "MAX_GAP_WIDTH", max_width)

    def by_tuples(names, mine):
        gaps = [tuple(sorted(str(n) for n in names[a + 1:b])) for a, b in zip(mine[:-1], mine[1:], strict=True)]
        return int(max(pd.Series(gaps, dtype=object).value_counts())) if gaps else 0

    rng = np.random.default_rng(5)
    for _ in range(500):
        alphabet = ["jit_step", "jit_a", "jit_b", "copy", "jit_c"][: rng.integers(1, 6)]
        names = np.array([alphabet[i] for i in rng.integers(0, len(alphabet), rng.integers(0, 80))], dtype=object)
        mine = np.flatnonzero(names == "jit_step")
        assert _most_common_gap(names, mine) == by_tuples(names, mine)


def test_device_steps_line_numbers_mix_label_stats_of_different_widths():
    """The loader keeps each label stat in the narrowest type its own values need (``step_num`` int8 under 128
    steps, ``group_id`` int16): a Steps line whose numbers come from both, and from a numeric name, is read (pandas
    refuses to put int16 values into an int8 array: a TypeError before)."""
    from tpudoctor.profile.analysis.steps import _device_steps_line

    events = pd.DataFrame({
        "plane_id": 0, "line_id": 1, "line_name": pd.Categorical(["Steps"] * 3),
        "plane_name": pd.Categorical(["/device:TPU:0"] * 3),
        "name": pd.Categorical(["a", "b", "3"]),
        "step_num": pd.array([1, None, None], dtype="Int8"), "group_id": pd.array([None, 1000, None], dtype="Int16"),
        "start_ps": np.array([0, 10, 20], np.int64), "duration_ps": np.array([10, 10, 10], np.int64)})
    steps = _device_steps_line(host_of(events)).steps
    assert steps.sort_values("start_ps")["step_num"].tolist() == [1, 1000, 3]


def test_union_and_merge_of_intervals_in_start_order_equal_those_of_the_same_intervals_shuffled():
    """Intervals that come in start order (a line's events) are read as they are, unsorted and uncopied: the
    union and the merged spans are those of the same intervals in any order."""
    rng = np.random.default_rng(8)
    for _ in range(50):
        starts = np.sort(rng.integers(0, 1000, rng.integers(1, 60)))
        ends = starts + rng.integers(0, 120, len(starts))
        shuffled = rng.permutation(len(starts))
        assert union_ps(starts, ends) == union_ps(starts[shuffled], ends[shuffled])
        for got, want in zip(merged(starts, ends), merged(starts[shuffled], ends[shuffled]), strict=True):
            assert got.tolist() == want.tolist()
