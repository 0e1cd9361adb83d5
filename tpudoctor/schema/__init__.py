"""JSON Schemas shipped with the package, and a validator for them."""

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


SCHEMA_NAMES = ("check_report", "bench_result", "profile_report", "profile_diagnosis")


@cache
def _registry() -> Any:
    """Every shipped schema by its ``$id``, so one schema can refer to another's definitions."""
    from referencing import Registry, Resource

    resources_by_id = []
    for name in SCHEMA_NAMES:
        schema = load_schema(name)
        if "$id" in schema:
            resources_by_id.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources_by_id)


def validate(document: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` when ``document`` does not match the named schema."""
    import jsonschema

    schema = load_schema(name)
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, registry=_registry(), format_checker=jsonschema.FormatChecker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise error
