"""The compiled schema check (jsonschema-rs) that accepts tpudoctor's own documents before jsonschema is loaded
(``tpudoctor.schema.validate_own``) keeps jsonschema's guarantee: it accepts no document that jsonschema refuses.

The documents are the JSON output snapshots of every report kind (tests/snapshots), each as written and with
seeded mutations at every depth: a value of another type (a tuple too), a key gone or added, a string that
breaks a pattern, an enum or a date-time. What the compiled check refuses goes on to jsonschema, so a stricter
compiled check costs time, never a verdict."""

from __future__ import annotations

import copy
import json
import random
import re

import pytest
from paths import TESTS

from tpudoctor import schema as schemas
from tpudoctor.documents import InvalidDocumentError, validated

pytest.importorskip("jsonschema_rs")

SNAPSHOTS = TESTS / "snapshots"
SCHEMA_OF_KIND = {"check": "check_report", "profile": "profile_report", "goodput": "goodput_report",
                  "hang": "hang_report", "memory": "memory_report", "diag": "diag_report"}
REPLACEMENTS = (None, True, 0, -1, 2.5, "", "x", "2.0", "1.7", "capture", "table:", "2026-13-45T99:00:00Z",
                "2026-12-05T18:00:00Z", [], [1], (1, 2), {}, {"x": 1}, {1: "x"})
MUTATIONS = 60


def snapshot_documents() -> list[tuple[str, str, dict]]:
    found = []
    for path in sorted(SNAPSHOTS.rglob("*.json")):
        if path.name.endswith(".redacted.json"):
            continue
        # what the snapshot tests even out, back to values of the same type
        text = path.read_text().replace('"packages": <normalised>', '"packages": {}').replace(
            '"<time>"', '"2026-12-05T18:00:00Z"')
        document = json.loads(re.sub(r"(?<=: )<[a-z]+>", "0.5", text))
        name = SCHEMA_OF_KIND.get(document.get("kind")) if isinstance(document, dict) else None
        if name is not None:
            found.append((path.name, name, document))
    return found


DOCUMENTS = snapshot_documents()


def spots(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from spots(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from spots(inner, (*path, index))


def mutate(document: dict, places: list, rng: random.Random):
    """One mutation of ``document`` in place; returns what undoes it."""
    path, value = places[rng.randrange(1, len(places))]
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    roll = rng.random()
    if isinstance(parent, dict) and roll < 0.2:
        del parent[last]
        return lambda: parent.__setitem__(last, value)
    if isinstance(parent, dict) and roll < 0.3:
        added = f"unknown_{rng.randrange(9)}"
        if added in parent:
            return lambda: None
        parent[added] = rng.choice(REPLACEMENTS)
        return lambda: parent.pop(added)
    parent[last] = value + rng.choice(["\n", " ", "x", ".1"]) if isinstance(value, str) and roll < 0.5 else \
        copy.deepcopy(rng.choice(REPLACEMENTS))
    return lambda: parent.__setitem__(last, value)


def jsonschema_accepts(document, name: str) -> bool:
    import jsonschema

    try:
        schemas.validate(document, name)
    except jsonschema.ValidationError:
        return False
    return True


def test_every_report_kind_has_snapshots_to_mutate():
    assert {name for _, name, _ in DOCUMENTS} >= {"check_report", "profile_report", "goodput_report", "hang_report",
                                                   "memory_report"}


@pytest.mark.parametrize("label,name,document", DOCUMENTS, ids=[label for label, _, _ in DOCUMENTS])
def test_the_compiled_check_accepts_nothing_jsonschema_refuses(label, name, document):
    assert jsonschema_accepts(document, name)
    assert schemas._accepted_without_jsonschema(document, name)  # the quick path serves tpudoctor's documents
    rng = random.Random(label)
    places = list(spots(document))
    refused = 0
    for _ in range(MUTATIONS):
        undo = mutate(document, places, rng)
        try:
            compiled = schemas._accepted_without_jsonschema(document, name)
            reference = jsonschema_accepts(document, name)
            assert reference or not compiled, f"{label}: accepted what jsonschema refuses: {document}"
        finally:
            undo()
        refused += not reference
    assert refused > 0  # the mutations reach what the schema says
    assert jsonschema_accepts(document, name)  # every mutation undone


def test_a_tuple_goes_to_jsonschema_which_takes_it_for_no_json_type():
    _, name, document = next(d for d in DOCUMENTS if d[1] == "check_report")
    odd = copy.deepcopy(document)
    odd["results"] = tuple(odd["results"])  # jsonschema-rs would read an array
    assert not schemas._accepted_without_jsonschema(odd, name)
    assert not jsonschema_accepts(odd, name)


def test_a_refused_document_gets_jsonschema_s_message_and_exit_3():
    _, _, document = next(d for d in DOCUMENTS if d[1] == "profile_report")
    broken = copy.deepcopy(document)
    broken["summary"] = "not an object"
    with pytest.raises(InvalidDocumentError, match="profile_report document its schema refuses: summary: ") as err:
        validated(broken, "profile_report")
    assert err.value.exit_code == 3
