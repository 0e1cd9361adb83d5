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
    """Raise ``jsonschema.ValidationError`` when ``document`` does not match the named schema.

    Beyond what JSON Schema can say: every number is finite (Python's JSON reader takes ``NaN`` and
    ``Infinity``, which no tpudoctor writes), and a check report holds each result id once per scope.
    """
    import jsonschema

    _require_finite_numbers(document)
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(document))
    if error is not None:
        raise error
    if name == "check_report":
        _require_unique_results(document)


def _require_finite_numbers(document: Any) -> None:
    import math
    from collections import deque

    import jsonschema

    stack: list[tuple[Any, tuple]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                raise jsonschema.ValidationError(f"{value} is not a finite number", path=deque(path))
        elif isinstance(value, dict):
            stack += [(v, (*path, k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, (*path, i)) for i, v in enumerate(value)]


def _require_unique_results(document: dict[str, Any]) -> None:
    """One result per check id and scope: a merged report splits a check by the workers of each cause, a
    worker's own report has each check once."""
    from collections import Counter, deque

    import jsonschema

    keys = Counter((r.get("id"), tuple((r.get("scope") or {}).get("workers") or ()))
                   for r in document.get("results") or [])
    repeated = [(key, n) for key, n in keys.items() if n > 1]
    if repeated:
        (check_id, workers), n = repeated[0]
        where = f" on workers {', '.join(workers)}" if workers else ""
        raise jsonschema.ValidationError(
            f"result {check_id}{where} appears {n} times; a report holds each check once", path=deque(["results"]))
