"""Hang rules: every rule's own examples, the registry (entry-point group, plugins, bad ids), and the
classification of real captures (py-spy's JSON from the hung JAX job, tests/data/hang)."""

from __future__ import annotations

import json
import re

import pytest
from paths import TESTS

from tpudoctor.families import FAMILIES, RegistryError
from tpudoctor.families import load_rules as load_family
from tpudoctor.hang.capture import read_dump_dir
from tpudoctor.hang.classify import process_state
from tpudoctor.hang.rule import Category, HangRule, Match, ThreadView, stack_example
from tpudoctor.hang.stacks import parse_dump

CAPTURES = TESTS / "data" / "hang"
ENTRY_POINT_GROUP = FAMILIES["hang-rules"].alias_group


def load_rules(*args, **kwargs):
    return load_family("hang-rules", *args, **kwargs)


RULES = load_rules()


@pytest.mark.parametrize("rule", sorted(RULES.values(), key=lambda c: c.id), ids=lambda c: c.id)
def test_rule_conforms_and_its_examples_hold(rule):
    assert re.match(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$", rule.id)
    assert isinstance(rule.category, Category) and rule.category is not Category.UNKNOWN
    assert rule.description(), f"{rule.id}: needs a docstring saying what it places"
    assert rule.docs.startswith("https://")
    assert any(e.matches for e in rule.examples) and any(not e.matches for e in rule.examples), \
        f"{rule.id}: needs an example it matches and one it does not"
    for example in rule.examples:
        found = rule().match(example.input.view())
        assert (found is not None) == example.matches, f"{rule.id}: {example.name}"
        if found is not None:
            assert isinstance(found, Match) and found.depth >= 0


def test_the_registry_lists_the_builtin_rules_and_has_an_entry_point_group():
    assert ENTRY_POINT_GROUP == "tpudoctor.hang_rules"
    assert {"collective-wait", "device-wait", "data-loading", "checkpoint-io", "compiling", "python-lock",
            "busy-loop", "debugger", "io-wait", "sleeping", "native-call", "running-python"} <= set(RULES)
    from importlib import metadata

    eps = [ep for ep in metadata.entry_points(group="tpudoctor")]  # the one group; ENTRY_POINT_GROUP is its alias
    assert any(ep.value == "tpudoctor.hang.rules" for ep in eps)


class AcmeRpcWait(HangRule):
    """The thread waits on Acme's RPC client."""

    id = "acme-rpc-wait"
    category = Category.IO
    rank = 3
    docs = "https://example.com/acme"
    examples = (stack_example("rpc", ("AcmeClient.call (acme/rpc.py:10)",), matches=True),
                stack_example("not rpc", ("main (train.py:1)",), matches=False))

    def match(self, thread: ThreadView):
        return self.first_frame(thread, lambda f: "acme/rpc.py" in f.file)


def test_a_plugin_rule_joins_and_wins_where_it_is_more_specific():
    rules = load_rules([("acme-plugin:acme", AcmeRpcWait)])
    assert rules["acme-rpc-wait"].source == "acme-plugin:acme"
    view = stack_example("x", ("AcmeClient.call (acme/rpc.py:10)", "read_shard (input_pipeline.py:50)",
                             "main (train.py:1)"), matches=True).input.view()
    from tpudoctor.hang.classify import classify_thread

    rule, match, context = classify_thread(view, rules.values())
    assert rule.id == "acme-rpc-wait" and context == "data"  # the data loader frame is further out


def test_bad_and_duplicate_rule_ids_are_registry_errors():
    class Bad(AcmeRpcWait):
        id = "Bad_Id"

    class Twin(AcmeRpcWait):
        id = "data-loading"

    with pytest.raises(RegistryError, match="invalid id"):
        load_rules([("x", Bad)])
    with pytest.raises(RegistryError, match="duplicate hang rule id data-loading"):
        load_rules([("x", Twin)])
    with pytest.raises(RegistryError, match="not a hang rule"):
        load_rules([("x", [object])])


def test_a_crashing_plugin_rule_does_not_take_the_classification_down():
    class Broken(AcmeRpcWait):
        id = "acme-broken"

        def match(self, thread):
            raise RuntimeError("boom")

    from tpudoctor.hang.classify import classify_thread

    view = stack_example("x", ("read_shard (input_pipeline.py:50)",), matches=True).input.view()
    rule, _match, _ctx = classify_thread(view, [*RULES.values(), Broken])
    assert rule.id == "data-loading"


@pytest.mark.parametrize(("capture", "stuck_category", "stuck_function"), [
    ("data_loader", "data", "read_shard"),
    ("checkpoint", "checkpoint", "write_atomically"),
    ("metrics_lock", "lock", "MetricsWriter.record"),
])
def test_real_captures_place_the_stuck_process_and_the_waiting_ones(capture, stuck_category, stuck_function):
    states = [process_state(c, list(RULES.values())) for c in read_dump_dir(str(CAPTURES / capture)).captures]
    stuck = [s for s in states if s.category == stuck_category]
    assert len(stuck) == 1 and stuck[0].frame.function == stuck_function
    assert stuck[0].progress == "frozen"
    waiting = [s for s in states if s is not stuck[0]]
    assert {s.category for s in waiting} == {"device"}  # float(loss) waits for the step's all-reduce
    assert {s.frame.function for s in waiting} == {"train_step"}  # the job's own frame, not jax's
    assert all("ArrayImpl._value" in s.detail or "BlockUntilReady" in s.detail for s in waiting)  # native or not


def test_the_lock_holder_is_named_from_the_real_capture():
    states = [process_state(c, list(RULES.values())) for c in read_dump_dir(str(CAPTURES / "metrics_lock")).captures]
    stuck = next(s for s in states if s.category == "lock")
    assert "held by thread 'metrics-writer'" in stuck.detail and "MetricsWriter.flush" in stuck.detail


def test_raw_pyspy_json_parses_into_the_same_stacks_as_the_capture():
    folder = CAPTURES / "data_loader"
    for raw in folder.glob("pid-*-sample-1.pyspy.json"):
        pid = raw.name.split("-")[1]
        kept = json.loads((folder / f"pid-{pid}.json").read_text())["samples"][0]["threads"]
        parsed = parse_dump(raw.read_text())
        assert [t.tid for t in parsed] == [t["tid"] for t in kept]
        assert [[f.function for f in t.frames] for t in parsed] == [[f["function"] for f in t["frames"]] for t in kept]


def test_native_frames_show_the_device_wait_of_a_real_capture():
    capture = next(c for c in read_dump_dir(str(CAPTURES / "device_step")).captures if c.native)
    state = process_state(capture, list(RULES.values()))
    assert state.category == "device" and state.native
    assert any("BlockUntilReady" in f.function for f in state.native)
