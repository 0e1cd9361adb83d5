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


def validate(document: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` when ``document`` does not match the named schema."""
    import jsonschema

    jsonschema.validate(document, load_schema(name), format_checker=jsonschema.FormatChecker())
