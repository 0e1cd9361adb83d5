"""A worker's check report from text: a worker's stdout (with login banners before it) or a stored file."""

from __future__ import annotations

import functools
import json
from typing import Any

from tpudoctor.errors import InputError
from tpudoctor.findings import SCHEMA_VERSION, Report, upgrade_check_report_v1

MAX_REPORT_BYTES = 64 * 1024 * 1024


def report_from_output(text: str, source: str) -> tuple[Report, dict[str, Any]]:
    """The check report in a worker's stdout. Lines before it (a login banner, a motd, a shell profile's
    echo) are skipped: the report is the first JSON object that starts a line and is a check report."""
    decoder = json.JSONDecoder()
    start = 0
    while True:
        at = text.find("{", start)
        if at < 0:
            raise InputError(f"{source}: no check report in the output")
        if at == 0 or text[at - 1] == "\n":
            try:
                document, _end = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                document = None
            if isinstance(document, dict) and document.get("kind") == "check":
                return report_from_document(document, source), document
        start = at + 1


def report_from_bytes(data: bytes, source: str) -> tuple[Report, dict[str, Any]]:
    if len(data) > MAX_REPORT_BYTES:
        raise InputError(f"{source} is {len(data)} bytes: too big for a check report")
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{source} is not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise InputError(f"{source} nests too deeply to be a check report") from None
    except ValueError as exc:
        raise InputError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InputError(f"{source} is not a check report: the top level is a {type(document).__name__}")
    return report_from_document(document, source), document


@functools.cache
def _validator():
    """One validator for every worker's report (building one checks the schema itself: slow for 64)."""
    import jsonschema

    from tpudoctor.schema import load_schema

    schema = _inline_refs(load_schema("check_report"))
    return jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.FormatChecker())


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with its local ``#/$defs/...`` references written out: resolving a reference for every
    result of every worker's report was most of a 64-worker merge's time."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def report_from_document(document: dict[str, Any], source: str) -> Report:
    """Validated against the check report schema (1.x upgraded first), as ``load_check_report`` does."""
    import jsonschema

    version = document.get("schema_version")
    major = version.split(".")[0] if isinstance(version, str) else None
    try:
        if major == "1":
            document = upgrade_check_report_v1(document)
        elif major != SCHEMA_VERSION.split(".")[0]:
            raise InputError(f"{source} has schema_version {version!r}; this tpudoctor reads {SCHEMA_VERSION}",
                             hint="run the same tpudoctor version on every worker")
        if "workers" in document and "slice" in document:
            raise InputError(f"{source} is already a merged report", hint="merge the workers' own reports")
        _validator().validate(document)
        return Report.from_dict(document)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise InputError(f"{source} is not a tpudoctor check report: {where}: {exc.message[:300]}") from None
    except RecursionError:
        raise InputError(f"{source} nests too deeply to be a check report") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{source} is not a valid check report: {type(exc).__name__}: {exc}") from None
