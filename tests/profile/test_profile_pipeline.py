"""The profile pipeline: a per-host map returning small picklable results, and one combine step."""

from __future__ import annotations

import dataclasses
import pickle
import shutil

import pytest
from paths import TESTS

import tpudoctor.profile
from tpudoctor.errors import InputError
from tpudoctor.profile.host_result import HostResult

FIXTURES = TESTS / "fixtures" / "profiles"


def _walk(value, path="result"):
    """Every (path, value) inside a HostResult: dataclasses, dicts and lists opened."""
    yield path, value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def test_the_map_returns_a_small_plain_picklable_result():
    result = tpudoctor.profile.analyze_host(str(FIXTURES / "tf_input_bound" / "localhost.xplane.pb"))
    assert isinstance(result, HostResult) and result.host == "localhost"
    kinds = {type(v).__module__.split(".")[0] for _, v in _walk(result)}
    assert kinds <= {"builtins", "tpudoctor"}, kinds  # no pandas, no numpy: nothing of the events travels
    data = pickle.dumps(result)
    size = (FIXTURES / "tf_input_bound" / "localhost.xplane.pb").stat().st_size
    assert len(data) < 64_000 and len(data) < size, (len(data), size)
    assert pickle.loads(data) == result


def test_combine_of_mapped_hosts_is_what_analyze_reports(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_02_02_00_00_00"
    run.mkdir(parents=True)
    files = []
    for host, case in (("w-0", "jax_steady"), ("w-1", "jax_recompiling")):
        files.append(run / f"{host}.xplane.pb")
        shutil.copyfile(FIXTURES / case / "localhost.xplane.pb", files[-1])
    mapped = [tpudoctor.profile.analyze_host(str(f)) for f in files]
    combined = tpudoctor.profile.combine(mapped, source=str(tmp_path), run=run.name, runs_available=[run.name])
    analysed = tpudoctor.profile.analyze(str(tmp_path))  # the map in worker processes
    assert combined.to_dict() == analysed.to_dict()
    first = combined.to_dict()
    again = tpudoctor.profile.combine(mapped, source=str(tmp_path), run=run.name, runs_available=[run.name])
    assert again.to_dict() == first  # combine leaves its inputs as they were
    # two captures that never synchronise: nobody waits for anybody, so no straggler (a slower mean
    # step is not one); each host keeps its own verdict
    assert analysed.straggler is None and analysed.verdicts["w-1"][0] == "compile-bound"
    # summaries are put on one time origin, as a loaded capture's are
    loaded = tpudoctor.profile.load(str(tmp_path))
    from tpudoctor.profile.summary import summarize

    assert analysed.summary.to_dict() == summarize(loaded).to_dict()


def test_a_bad_host_is_reported_and_the_others_analysed(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(FIXTURES / "jax_steady" / "localhost.xplane.pb", run / "good.xplane.pb")
    (run / "bad.xplane.pb").write_bytes(b"\x00\x01garbage")
    report = tpudoctor.profile.analyze(str(run))
    assert list(report.hosts) == ["good"] and "bad" in report.failed_hosts
    (run / "good.xplane.pb").write_bytes(b"")
    with pytest.raises(InputError, match="no host of .* could be loaded"):
        tpudoctor.profile.analyze(str(run))
