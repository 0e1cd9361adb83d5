"""JAX device memory profiles (``jax.profiler.save_device_memory_profile``) read by ``tpudoctor memory``: profiles
made here by real JAX processes on eight virtual CPU devices, with JAX's own list of live arrays as the oracle;
pprof's field numbers against TensorFlow's copy of the schema; bad files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tpudoctor import cli
from tpudoctor.captures import pprof_schema
from tpudoctor.memory.device_profile import read_device_profile
from tpudoctor.schema import validate

MAKE = textwrap.dedent('''
    import json, os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax, jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()), ("data",))
    kept = []
    def make_unsharded():
        return jax.device_put(jnp.ones((4096, 4096), jnp.float32), jax.devices()[0])  # 64 MiB on one device
    def make_sharded():
        return jax.device_put(jnp.ones((8192, 1024), jnp.float32), NamedSharding(mesh, P("data")))
    if sys.argv[2] == "unsharded":
        kept += [make_unsharded(), make_unsharded()]
    kept += [make_sharded() for _ in range(3)]
    jax.block_until_ready(kept)
    jax.profiler.save_device_memory_profile(sys.argv[1])
    live = {}
    for array in jax.live_arrays():
        for shard in array.addressable_shards:
            key = str(shard.device)
            live[key] = live.get(key, 0) + shard.data.nbytes
    print(json.dumps(live))
''')


def _make(tmp_path: Path, case: str) -> tuple[Path, dict]:
    path = tmp_path / f"{case}.prof"
    script = tmp_path / f"make_{case}.py"
    script.write_text(MAKE)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    done = subprocess.run([sys.executable, str(script), str(path), case], capture_output=True, text=True,
                          timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return path, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    folder = tmp_path_factory.mktemp("device-profiles")
    return {case: _make(folder, case) for case in ("unsharded", "sharded")}


def test_live_bytes_per_device_equal_jaxs_own_live_arrays(profiles):
    for case, (path, live) in profiles.items():
        profile = read_device_profile(path)
        assert "space/bytes" in profile.sample_types
        per_device = profile.per_device().set_index("device")["buffer_bytes"].to_dict()
        assert len(per_device) == 8, per_device
        # JAX names a device one way in the profile and another in str(device); the sums and the spread must agree
        assert sorted(per_device.values()) == sorted(live.values()), (case, per_device, live)


def test_an_array_left_on_one_device_is_named_with_the_line_that_made_it(capsys, profiles):
    path, _ = profiles["unsharded"]
    code = cli.main(["memory", str(path), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    validate(doc, "memory_report")
    assert code == 0  # a WARN: the default gate is fail
    (section,) = doc["profiles"]
    assert section["devices"][0]["bytes"] >= 2 * 64 << 20
    (warn,) = [f for f in doc["findings"] if f["id"] == "memory-device-imbalance"]
    assert warn["status"] == "WARN" and warn["scope"]["chips"] == [section["devices"][0]["device"]]
    assert "make_unsharded" in warn["message"]  # the user's own line, not JAX's frames
    top = section["top_sites"][0]
    assert "make_unsharded" in top["site"] and top["count"] == 2 and top["devices"] == 1
    assert warn["evidence"]["ratio"] > 2
    assert any("NamedSharding" in c for c in warn["remediation"]["commands"])


def test_sharded_arrays_stand_out_nowhere(capsys, profiles):
    path, _ = profiles["sharded"]
    code = cli.main(["memory", str(path), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert not [f for f in doc["findings"] if f["id"] == "memory-device-imbalance"]
    (summary,) = [f for f in doc["findings"] if f["id"] == "memory-device-profile"]
    assert summary["status"] == "PASS" and "on 8 device(s)" in summary["message"]
    assert "make_sharded" in doc["profiles"][0]["top_sites"][0]["site"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "junit"])
def test_every_format_shows_the_profile(capsys, profiles, fmt):
    path, _ = profiles["unsharded"]
    assert cli.main(["memory", str(path), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "device memory profile" in out or fmt == "junit"
    assert "memory-device-imbalance" in out or "one device holds most" in out


@pytest.mark.parametrize("kind", ["empty", "not-gzip", "not-pprof", "cpu-profile"])
def test_bad_profiles_exit_2_with_a_clear_error(capsys, tmp_path, kind):
    path = tmp_path / "memory.prof"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "not-gzip":
        path.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    elif kind == "not-pprof":
        path.write_bytes(b"\xff\xff\xff\xff" * 8)
    else:  # a pprof profile valued in nanoseconds, not bytes
        profile = pprof_schema.profile_class()()
        profile.string_table.extend(["", "cpu", "nanoseconds"])
        profile.sample_type.add(type=1, unit=2)
        path.write_bytes(profile.SerializeToString())
    code = cli.main(["memory", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(path) in err


def test_every_field_number_is_pprofs():
    tf_profile = pytest.importorskip("tensorflow.tsl.profiler.protobuf.profile_pb2")
    theirs = {m.name: m for m in tf_profile.DESCRIPTOR.message_types_by_name.values()}
    checked = 0
    for name, fields in pprof_schema.MESSAGES:
        fields_theirs = {f.name: f for f in theirs[name].fields}
        for field, number, _, repeated in fields:
            assert fields_theirs[field].number == number, f"{name}.{field}"
            theirs_field = fields_theirs[field]
            is_repeated = (theirs_field.is_repeated if hasattr(theirs_field, "is_repeated")
                           else theirs_field.label == theirs_field.LABEL_REPEATED)
            assert is_repeated == repeated, f"{name}.{field}"
            checked += 1
    assert checked >= 19


def _hand_made(path: Path, samples: list[tuple[str, int, int]]) -> Path:
    """A profile shaped as JAX writes one (``allocations/count``, ``space/bytes``, ``device`` and ``kind`` labels),
    with the values the 2026-12-04 probe gave it."""
    profile = pprof_schema.profile_class()()
    profile.string_table.extend(["", "allocations", "count", "space", "bytes", "make", "/app/train.py", "device",
                                 "kind", "buffer"])
    profile.sample_type.add(type=1, unit=2)
    profile.sample_type.add(type=3, unit=4)
    profile.function.add(id=1, name=5, filename=6)
    profile.location.add(id=1).line.add(function_id=1, line=10)
    for device, count, size in samples:
        if device not in profile.string_table:
            profile.string_table.append(device)
        sample = profile.sample.add(location_id=[1], value=[count, size])
        sample.label.add(key=7, str=list(profile.string_table).index(device))
        sample.label.add(key=8, str=9)
    path.write_bytes(profile.SerializeToString())
    return path


@pytest.mark.parametrize(("samples", "what"), [
    ([("tpu:0", 1, -5 << 30), ("tpu:1", 1, 1 << 30), ("tpu:2", 1, 1 << 30)], "negative bytes value (-5,368,709,120)"),
    ([("tpu:0", -3, 1 << 30), ("tpu:1", 1, 1 << 30)], "negative count value (-3)")])
def test_negative_values_are_refused_with_exit_2(capsys, tmp_path, samples, what):
    path = _hand_made(tmp_path / "negative.prof", samples)
    code = cli.main(["memory", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and what in err and "schema refuses" not in err, err


def test_sums_past_int64_do_not_wrap(capsys, tmp_path):
    path = _hand_made(tmp_path / "overflow.prof", [("tpu:0", 1, 2**62), ("tpu:0", 1, 2**62), ("tpu:1", 1, 1)])
    code = cli.main(["memory", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    doc = json.loads(out)
    validate(doc, "memory_report")
    (section,) = doc["profiles"]
    assert section["total_bytes"] == 2**63 + 1
    assert {d["device"]: d["bytes"] for d in section["devices"]} == {"tpu:0": 2**63, "tpu:1": 1}
    assert section["top_sites"][0]["bytes"] == 2**63 + 1 and section["top_sites"][0]["count"] == 3
