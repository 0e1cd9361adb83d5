"""Reading a saved ``tpudoctor check --format json`` report back: validated, or a clear ``InputError``.

>>> report = load_check_report("report.json")   # tpudoctor.findings.Report

Every problem (missing, unreadable, not UTF-8, not JSON, too deep, too big, not a check report,
a schema from a newer major version) is an ``InputError`` naming the file, never another
exception: saved reports come from other machines and other versions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tpudoctor.errors import InputError

MAX_REPORT_BYTES = 64 * 1024 * 1024  # a check report is kilobytes; refuse to parse a runaway file
HINT = "make one with: tpudoctor check --format json -o report.json"


def load_check_report(path: str | os.PathLike[str]):
    """The ``Report`` saved at ``path``; ``InputError`` for anything that is not a valid check report."""
    import jsonschema

    from tpudoctor.findings import SCHEMA_VERSION, Report
    from tpudoctor.schema import validate

    target = Path(path)
    try:
        if target.stat().st_size > MAX_REPORT_BYTES:
            raise InputError(f"{target} is {target.stat().st_size} bytes: too big for a check report", hint=HINT)
        text = target.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"check report {target} does not exist", hint=HINT) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"check report {target} is not UTF-8 text (byte {exc.start})", hint=HINT) from None
    except OSError as exc:
        raise InputError(f"cannot read check report {target}: {exc.strerror or exc}") from exc
    try:
        document = json.loads(text)
    except RecursionError:
        raise InputError(f"check report {target} nests too deeply to be a check report", hint=HINT) from None
    except ValueError as exc:
        raise InputError(f"check report {target} is not valid JSON: {exc}", hint=HINT) from None
    if not isinstance(document, dict):
        raise InputError(f"{target} is not a check report: the top level is a {type(document).__name__}", hint=HINT)
    version = document.get("schema_version")
    if not isinstance(version, str) or version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise InputError(f"{target} has schema_version {version!r}; this tpudoctor reads {SCHEMA_VERSION}",
                         hint="re-run the check with this version of tpudoctor")
    try:
        validate(document, "check_report")
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise InputError(f"{target} is not a valid check report: {where}: {exc.message[:300]}", hint=HINT) from None
    except RecursionError:
        raise InputError(f"check report {target} nests too deeply to be a check report", hint=HINT) from None
    try:
        return Report.from_dict(document)
    except (KeyError, TypeError, ValueError) as exc:  # the schema is looser than the model in a few places
        raise InputError(f"{target} is not a valid check report: {type(exc).__name__}: {exc}", hint=HINT) from None
