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
def _schemas_by_id() -> dict[str, dict[str, Any]]:
    """Every packaged schema with an ``$id``, by it: what a ``$ref`` to another schema finds."""
    found = {}
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".schema.json"):
            schema = load_schema(entry.name[: -len(".schema.json")])
            if "$id" in schema:
                found[schema["$id"]] = schema
    return found


@cache
def _registry():
    from referencing import Registry, Resource

    return Registry().with_resources((uri, Resource.from_contents(schema)) for uri, schema in _schemas_by_id().items())


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
    _require_finite_numbers(document)
    _require_schema(document, name)
    if name == "check_report":
        _require_unique_results(document)


def validate_own(document: dict[str, Any], name: str) -> None:
    """``validate`` for a document tpudoctor made itself (``documents.prepare``), quicker: jsonschema-rs (compiled)
    accepts it first, where it is installed; jsonschema reads only what it does not accept, which it refuses
    with its own message or accepts after all. jsonschema's import (0.02 s: attrs, referencing, every draft's
    meta-schema read from disk) was a tenth of ``profile analyze`` past its decode and analyses. Not for a file
    read from outside: jsonschema bounds its nesting (``RecursionError``), which the compiled one does not say."""
    if not _accepted_without_jsonschema(document, name):
        _require_schema(document, name)
    if name == "check_report":
        _require_unique_results(document)


def _accepted_without_jsonschema(document: Any, name: str) -> bool:
    """Every number finite (else ``ValidationError``), and jsonschema-rs accepts ``document``."""
    return _require_finite_numbers(document) and _compiled_accepts(document, name)


def _require_schema(document: Any, name: str) -> None:
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(document))
    if error is not None:
        raise error


def _compiled_accepts(document: Any, name: str) -> bool:
    """jsonschema-rs accepts ``document`` (of JSON's own types only: ``_require_finite_numbers``); False where it
    refuses it, cannot read a value of it or is not installed."""
    validator = _compiled_validator(name)
    try:
        return validator is not None and validator.is_valid(document)
    except (ValueError, TypeError, OverflowError):  # a value it does not convert: jsonschema judges it
        return False


@cache
def _compiled_validator(name: str):
    try:
        import jsonschema_rs

        # formats checked (date-time), as jsonschema's FormatChecker does where it can
        registry = jsonschema_rs.Registry(list(_schemas_by_id().items()))
        return jsonschema_rs.validator_for(load_schema(name), registry=registry, validate_formats=True)
    except Exception:  # noqa: BLE001 - not installed, or a release without this API: jsonschema alone judges
        return None


_JSON_LEAVES = frozenset({str, int, float, bool, type(None)})


def _require_finite_numbers(document: Any) -> bool:
    """Raise where a number is not finite; True where ``document`` holds JSON's own types alone (dict with str
    keys, list, str, int, float, bool, None), which jsonschema-rs reads as jsonschema does: jsonschema takes a
    tuple for no JSON type, jsonschema-rs for an array."""
    import math
    from collections import deque

    plain = True
    stack: list[tuple[Any, tuple]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                import jsonschema

                raise jsonschema.ValidationError(f"{value} is not a finite number", path=deque(path))
        if isinstance(value, dict):
            plain = plain and type(value) is dict and all(type(k) is str for k in value)
            stack += [(v, (*path, k)) for k, v in value.items()]
        elif isinstance(value, list):
            plain = plain and type(value) is list
            stack += [(v, (*path, i)) for i, v in enumerate(value)]
        else:
            plain = plain and type(value) in _JSON_LEAVES
    return plain


def _require_unique_results(document: dict[str, Any]) -> None:
    """One result per check id and scope: a merged report splits a check by the workers of each cause, a
    worker's own report has each check once."""
    from collections import Counter, deque

    keys = Counter((r.get("id"), tuple((r.get("scope") or {}).get("workers") or ()))
                   for r in document.get("results") or [])
    repeated = [(key, n) for key, n in keys.items() if n > 1]
    if repeated:
        (check_id, workers), n = repeated[0]
        where = f" on workers {', '.join(workers)}" if workers else ""
        import jsonschema

        raise jsonschema.ValidationError(
            f"result {check_id}{where} appears {n} times; a report holds each check once", path=deque(["results"]))
