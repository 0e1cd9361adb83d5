"""JSON Schemas shipped with the package, and a validator for them.

A schema may ``$ref`` another packaged schema by its ``$id`` (the profile report's findings use the
check report's ``result``): all of them are registered together.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def load_schema(name: str) -> dict[str, Any]:
    """``load_schema("check_report")`` -> the parsed ``check_report.schema.json``."""
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _registry():
    from referencing import Registry, Resource

    pairs = []
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".schema.json"):
            schema = load_schema(entry.name[: -len(".schema.json")])
            if "$id" in schema:
                pairs.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(pairs)


@cache
def _validator(name: str):
    """One validator per schema: building one checks the schema itself, which a merge of 64 reports
    would otherwise pay 64 times."""
    import jsonschema

    schema = load_schema(name)
    return jsonschema.validators.validator_for(schema)(
        schema, registry=_registry(), format_checker=jsonschema.FormatChecker())


def validate(document: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` when ``document`` does not match the named schema."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(document))
    if error is not None:
        raise error
