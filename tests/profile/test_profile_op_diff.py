"""Op-level diff of two captures: added, removed, slower, faster, top movers (TPU: rate deltas too).

No pair of real captures here differs in exactly one op, so the second capture of a pair is the
first one with one documented, real-schema edit: every execution of one HLO op made longer
(``XEvent.duration_ps`` and, on TPU, the ``device_duration_ps`` stat scaled) or removed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from paths import TESTS
from shared_data import SHARED_DATA
from xspace_edits import edited as _edited

import tpudoctor.profile
from tpudoctor.profile.op_diff import diff_ops, op_table

FIXTURES = TESTS / "fixtures" / "profiles"
SHARED = SHARED_DATA  # ../shared/data, or TPUDOCTOR_SHARED_DATA
V6E = SHARED / "xprof_tpu_inference_2.xplane.pb"
needs_v6e = pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")


def _host(path: Path):
    return next(iter(tpudoctor.profile.load(str(path)).hosts.values()))


def test_one_slower_op_on_cpu_is_the_first_mover(tmp_path):
    src = FIXTURES / "jax_compute_bound" / "localhost.xplane.pb"
    slower = _edited(src, tmp_path / "slower.xplane.pb", "wrapped_tanh.2", factor=2.0)
    diff = diff_ops(op_table(_host(src)), op_table(_host(slower)))
    first = diff.movers.iloc[0]
    assert (first["op_name"], first["status"]) == ("wrapped_tanh.2", "slower")
    assert first["delta_avg_time_percent"] == pytest.approx(100, abs=0.1)
    assert first["delta_time_ps"] == pytest.approx(first["baseline_time_ps"], rel=1e-6)
    assert len(diff.movers) == 1 and list(diff.slower["op_name"]) == ["wrapped_tanh.2"]
    assert diff.added.empty and diff.removed.empty and diff.faster.empty
    assert diff.time_basis == "total"


def test_same_capture_has_no_movers():
    table = op_table(_host(FIXTURES / "jax_steady" / "localhost.xplane.pb"))
    diff = diff_ops(table, table)
    assert diff.movers.empty and set(diff.ops["status"]) == {"same"}
    assert len(diff.ops) == len(table) > 3


def test_real_captures_of_different_jobs():
    steady = _host(FIXTURES / "jax_steady" / "localhost.xplane.pb")
    compute = _host(FIXTURES / "jax_compute_bound" / "localhost.xplane.pb")
    a, b = op_table(steady), op_table(compute)
    diff = diff_ops(a, b, baseline_steps=16, candidate_steps=8)
    assert diff.time_basis == "per-step"
    assert diff.baseline_time_ps == pytest.approx(a["total_time_ps"].sum() / 16)
    assert diff.candidate_time_ps == pytest.approx(b["total_time_ps"].sum() / 8)
    # every op is in exactly one class, and the movers are ordered by absolute change
    assert len(diff.ops) == len(diff.added) + len(diff.removed) + len(diff.slower) + len(diff.faster) + int(
        (diff.ops["status"] == "same").sum())
    moves = np.abs(diff.movers["delta_time_ps"].to_numpy())
    assert np.all(moves[:-1] >= moves[1:]) and len(diff.movers) <= 10
    assert diff.ops["delta_time_ps"].sum() == pytest.approx(diff.candidate_time_ps - diff.baseline_time_ps)


@pytest.mark.needs_shared_data
@needs_v6e
def test_one_slower_op_on_tpu_with_rate_deltas(tmp_path):
    src = tmp_path / "v6e.xplane.pb"
    shutil.copyfile(V6E, src)
    slower = _edited(src, tmp_path / "slower.xplane.pb", "broadcast_add_fusion.2", factor=3.0)
    diff = diff_ops(op_table(_host(src)), op_table(_host(slower)))
    first = diff.movers.iloc[0]
    assert (first["op_name"], first["status"], first["program_id"]) == (
        "broadcast_add_fusion.2", "slower", "12190760917235803885")
    assert first["delta_avg_time_percent"] == pytest.approx(200, rel=0.01)
    # same FLOPs and bytes in three times the time: a third of the rate
    assert first["candidate_flop_rate_flops_per_s"] == pytest.approx(first["baseline_flop_rate_flops_per_s"] / 3,
                                                                     rel=0.01)
    assert first["delta_hbm_bw_bytes_per_s"] == pytest.approx(-2 / 3 * first["baseline_hbm_bw_bytes_per_s"], rel=0.01)
    assert len(diff.movers) == 1


@pytest.mark.needs_shared_data
@needs_v6e
def test_removed_op_on_tpu(tmp_path):
    src = tmp_path / "v6e.xplane.pb"
    shutil.copyfile(V6E, src)
    fewer = _edited(src, tmp_path / "fewer.xplane.pb", "broadcast.2", remove=True)
    diff = diff_ops(op_table(_host(src)), op_table(_host(fewer)))
    assert list(diff.removed["op_name"]) == ["broadcast.2"]
    assert diff.movers.iloc[0]["op_name"] == "broadcast.2" and len(diff.movers) == 1
    back = diff_ops(op_table(_host(fewer)), op_table(_host(src)))
    assert list(back.added["op_name"]) == ["broadcast.2"] and back.added.iloc[0]["candidate_occurrences"] == 1


def test_diff_as_plain_data_for_a_json_report(tmp_path):
    import json

    src = FIXTURES / "jax_compute_bound" / "localhost.xplane.pb"
    removed = _edited(src, tmp_path / "removed.xplane.pb", "dot_general.9", remove=True)
    doc = diff_ops(op_table(_host(src)), op_table(_host(removed))).to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc  # plain JSON, no NaN
    assert doc["counts"] == {"added": 0, "removed": 1, "slower": 0, "faster": 0}
    assert doc["movers"][0]["op_name"] == "dot_general.9" and doc["movers"][0]["candidate_avg_time_ps"] is None
