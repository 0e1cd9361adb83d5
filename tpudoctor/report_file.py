"""Reading saved JSON documents back (check reports, profile reports, bench baselines).

>>> report = load_check_report("report.json")   # tpudoctor.findings.Report

Every problem (missing, unreadable, not UTF-8, not JSON, too deep, too big, the wrong kind of
document, a schema from a newer major version) is an ``InputError`` naming the file, never
another exception: saved documents come from other machines and other versions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tpudoctor.errors import InputError

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # these documents are kilobytes; refuse to parse a runaway file
HINT = "make one with: tpudoctor check --format json -o report.json"


class ForeignDocument(InputError):
    """A tpudoctor document of another kind than the reader takes (a diag report given to merge)."""

    def __init__(self, message: str, *, kind: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind


Upgrades = Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]


def read_document(path: str | os.PathLike[str], *, what: str, schema: str, schema_version: str,
                  hint: str | None = None, max_bytes: int = MAX_DOCUMENT_BYTES, upgrades: Upgrades | None = None,
                  kind: str | None = None, reads: str | None = None) -> dict[str, Any]:
    """The JSON object at ``path``, validated against the packaged schema ``schema``.

    ``what`` names the document in messages ("check report", "bench document"). ``upgrades`` maps an
    older major version ("1") to a function that rewrites such a document into the current shape
    before it is validated, so that reports saved by older versions still read. ``kind``: the document
    ``kind`` this reader takes; a tpudoctor document of another kind is named as such, with ``reads`` (what
    the command reads) as the hint.
    """
    target = Path(path)
    try:
        size = target.stat().st_size
        if size > max_bytes:
            raise InputError(f"{what} {target} is {size} bytes: too big for a {what}", hint=hint)
        data = target.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} {target} does not exist", hint=hint) from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {target}: {exc.strerror or exc}", hint=hint) from None
    return parse_document(data, str(target), what=what, schema=schema, schema_version=schema_version, hint=hint,
                          max_bytes=max_bytes, upgrades=upgrades, kind=kind, reads=reads)


def parse_document(data: bytes, name: str, *, what: str, schema: str, schema_version: str, hint: str | None = None,
                   max_bytes: int = MAX_DOCUMENT_BYTES, upgrades: Upgrades | None = None, kind: str | None = None,
                   reads: str | None = None) -> dict[str, Any]:
    """``read_document`` for bytes that came from elsewhere (a Cloud Storage object); ``name`` is
    where they came from, for messages."""
    if len(data) > max_bytes:
        raise InputError(f"{what} {name} is {len(data)} bytes: too big for a {what}", hint=hint)
    try:
        document = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {name} is not UTF-8 text (byte {exc.start})", hint=hint) from None
    except RecursionError:
        raise InputError(f"{what} {name} nests too deeply to be a {what}", hint=hint) from None
    except ValueError as exc:
        raise InputError(f"{what} {name} is not valid JSON: {exc}", hint=hint) from None
    return check_document(document, name, what=what, schema=schema, schema_version=schema_version, hint=hint,
                          upgrades=upgrades, kind=kind, reads=reads)


def check_document(document: Any, name: str, *, what: str, schema: str, schema_version: str,
                   hint: str | None = None, upgrades: Upgrades | None = None, kind: str | None = None,
                   reads: str | None = None) -> dict[str, Any]:
    """A parsed JSON value as a current ``schema`` document: upgraded where ``upgrades`` knows its
    major version, then validated; ``InputError`` otherwise."""
    import jsonschema

    from tpudoctor.schema import validate

    if not isinstance(document, dict):
        raise InputError(f"{name} is not a {what}: the top level is a {type(document).__name__}", hint=hint)
    found = document.get("kind")
    if kind is not None and isinstance(found, str) and found != kind and _is_tpudoctor(document):
        raise ForeignDocument(f"{name} is a tpudoctor {found} report, not a {what}", kind=found, hint=reads or hint)
    version = document.get("schema_version")
    upgrade = (upgrades or {}).get(version.split(".")[0]) if isinstance(version, str) else None
    if upgrade is not None:
        try:
            document, version = upgrade(document), schema_version
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{name} is not a tpudoctor {what}: {type(exc).__name__}: {exc}", hint=hint) from None
    if not isinstance(version, str) or version.split(".")[0] != schema_version.split(".")[0]:
        raise InputError(f"{what} {name} has schema_version {version!r}; this tpudoctor reads {schema_version}",
                         hint=f"make the {what} again with this version of tpudoctor")
    try:
        validate(document, schema)
    except RecursionError:
        raise InputError(f"{what} {name} nests too deeply to be a {what}", hint=hint) from None
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise InputError(f"{name} is not a tpudoctor {what}: {where}: {exc.message[:300]}", hint=hint) from None
    return document


def _is_tpudoctor(document: dict[str, Any]) -> bool:
    tool = document.get("tool")
    return isinstance(tool, dict) and tool.get("name") == "tpudoctor"


def load_check_report(path: str | os.PathLike[str]):
    """The ``Report`` saved at ``path``; ``InputError`` for anything that is not a valid check report."""
    from tpudoctor.findings import SCHEMA_VERSION, Report, upgrade_check_report_v1

    document = read_document(path, what="check report", schema="check_report", schema_version=SCHEMA_VERSION,
                             hint=HINT, upgrades={"1": upgrade_check_report_v1})
    try:
        return Report.from_dict(document)
    except (KeyError, TypeError, ValueError) as exc:  # the schema is looser than the model in a few places
        raise InputError(f"{path} is not a valid check report: {type(exc).__name__}: {exc}", hint=HINT) from None
