"""Every reference model trains a few steps on this machine's CPU and its loss drops."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from tpudoctor.reference_models import MODEL_NAMES, UnknownModelError, model_version, result_log

# One interpreter for all four models (TensorFlow imports once); the TFRecord input path too.
TRAIN_ALL = """
import json, sys
from tpudoctor.reference_models.train import RunConfig, run
out = {}
for name in sys.argv[2:]:
    out[name] = run(RunConfig(model=name, steps_per_window=4, windows=2), emit=lambda *a, **k: None)
out["dense_tfrecord"] = run(RunConfig(model="dense", steps_per_window=4, windows=2, data_dir=sys.argv[1]),
                            emit=lambda *a, **k: None)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_every_reference_model_trains_and_its_loss_drops(tmp_path):
    data_dir = tmp_path / "tfrecords"
    proc = subprocess.run([sys.executable, "-c", TRAIN_ALL, str(data_dir), *MODEL_NAMES],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in (*MODEL_NAMES, "dense_tfrecord"):
        r = results[name]
        assert r["loss_end"] < r["loss_start"], (name, r["loss_start"], r["loss_end"])
        assert r["loss_dropped"] is True
        assert r["compile_time_ms"] > 0 and len(r["examples_per_s"]) == 2
        assert all(x > 0 for x in r["examples_per_s"])
        assert r["device"]["platform"] == "CPU" and r["device"]["device_count"] == 1
        assert r["global_batch_size"] == r["per_replica_batch_size"] * r["replicas"]
        assert r["versions"]["tensorflow"] and r["versions"]["python"]
    assert results["dense_tfrecord"]["input"] == "tfrecord"
    written = sorted(p.name for p in data_dir.iterdir())
    assert written == ["tpudoctor-dense-00000-of-00002.tfrecord", "tpudoctor-dense-00001-of-00002.tfrecord"]


@pytest.mark.slow
def test_runner_entry_point_prints_structured_result_lines():
    proc = subprocess.run([sys.executable, "-m", "tpudoctor.reference_models.run", "--model", "dense",
                           "--steps", "3", "--repeats", "2"], capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = result_log.parse_events(proc.stdout)
    keys = [e["key"] for e in events]
    assert keys == ["run_start", "compile", "warmup", "window", "window", "run_result"]
    assert all(e["time_ms"] > 0 and e["event_type"] in ("POINT_IN_TIME", "INTERVAL_END") for e in events)
    result = events[-1]["value"]
    assert result["model_version"] == model_version("dense")
    assert result["loss_dropped"] is True


def test_runner_rejects_bad_arguments_with_exit_2():
    proc = subprocess.run([sys.executable, "-m", "tpudoctor.reference_models.run", "--model", "gpt5"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_model_version_is_a_stable_source_hash():
    assert model_version("dense") == model_version("dense")
    assert model_version("dense").startswith("dense-") and model_version("dense") != model_version("mlp")
    with pytest.raises(UnknownModelError):
        model_version("gpt5")


def test_result_lines_round_trip_and_ignore_noise():
    line = result_log.format_event("window", {"examples_per_s": 12.5})
    text = f"W0000 some TF log\n{line}\n:::TPUDOCTOR {{broken json\n"
    events = result_log.parse_events(text)
    assert len(events) == 1 and events[0]["value"] == {"examples_per_s": 12.5}
    assert json.loads(line.split(" ", 1)[1])["key"] == "window"


def test_importing_the_reference_models_does_not_import_tensorflow():
    code = ("import sys, tpudoctor.reference_models.run, tpudoctor.reference_models.train, "
            "tpudoctor.reference_models.bert_tiny, tpudoctor.bench.launch\n"
            "assert 'tensorflow' not in sys.modules")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


JAX_TRAIN = """
import json
from tpudoctor.reference_models.jax_train import run
from tpudoctor.reference_models.train import RunConfig
print(json.dumps({m: run(RunConfig(model=m, steps_per_window=4, windows=2), emit=lambda *a, **k: None)
                  for m in ("dense", "mlp")}))
"""


@pytest.mark.slow
def test_jax_variants_train_and_their_loss_drops():
    pytest.importorskip("jax")
    proc = subprocess.run([sys.executable, "-c", JAX_TRAIN], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in results.items():
        assert r["framework"] == "jax" and r["versions"]["jax"]
        assert r["loss_end"] < r["loss_start"], (name, r["loss_start"], r["loss_end"])
        assert r["global_batch_size"] == r["per_replica_batch_size"] * r["device"]["device_count"]
        assert r["model_version"] != model_version(name)  # a JAX baseline never matches a Keras one


JAX_TRAIN_CONV_ATTENTION = """
import json
from tpudoctor.reference_models.jax_train import run
from tpudoctor.reference_models.train import RunConfig
print(json.dumps({m: run(RunConfig(model=m, steps_per_window=3, windows=2),
                         emit=lambda *a, **k: None)
                  for m in ("resnet_tiny", "bert_tiny")}))
"""


@pytest.mark.slow
def test_jax_resnet_and_bert_train_and_their_loss_drops():
    pytest.importorskip("jax")
    proc = subprocess.run([sys.executable, "-c", JAX_TRAIN_CONV_ATTENTION], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in results.items():
        assert r["framework"] == "jax" and r["model"] == name
        assert r["loss_end"] < r["loss_start"], (name, r["loss_start"], r["loss_end"])
        assert r["global_batch_size"] == r["per_replica_batch_size"] * r["device"]["device_count"]
        assert r["model_version"] != model_version(name)  # a JAX baseline never matches a Keras one


def test_jax_model_parameters_mirror_the_keras_architectures():
    jax = pytest.importorskip("jax")
    from tpudoctor.reference_models import bert_tiny, resnet_tiny
    from tpudoctor.reference_models.jax_models import init_params, loss_fn

    resnet = init_params("resnet_tiny", jax.random.PRNGKey(0))
    assert [k for k in resnet if k.startswith("stage")] == ["stage1", "stage2", "stage3"]
    assert "proj" not in resnet["stage1"] and resnet["stage3"]["proj"].shape == (1, 1, 32, 64)
    assert resnet["logits"]["w"].shape == (64, resnet_tiny.CLASSES)
    bert = init_params("bert_tiny", jax.random.PRNGKey(0))
    assert bert["token_embedding"].shape == (bert_tiny.VOCAB, bert_tiny.HIDDEN)
    assert [k for k in bert if k.startswith("layer")] == [f"layer{i}" for i in range(bert_tiny.LAYERS)]
    x, y = bert_tiny.make_data(8)
    loss = float(loss_fn("bert_tiny", bert, x, y))
    assert abs(loss - math.log(bert_tiny.CLASSES)) < 0.5  # untrained: near chance
