"""``tpudoctor explain ID`` and ``tpudoctor list-signatures``: what a log signature means, what it
matches, and how to fix it, for someone who has read a diagnosis and wants more."""

from __future__ import annotations

import argparse
import difflib
import json
from typing import Any

from tpudoctor.commands.common import add_plugin_flag
from tpudoctor.errors import UsageError
from tpudoctor.exitcodes import ExitCode

SCHEMA_VERSION = 1


def register(sub: argparse._SubParsersAction) -> None:
    explain = sub.add_parser("explain", help="explain a log failure signature or a check (what it means, fixes)")
    explain.add_argument("signature_id", metavar="ID",
                         help="signature id or check id, as in a report (e.g. socket-closed, POD-004)")
    explain.add_argument("--format", choices=("text", "json"), default="text")
    add_plugin_flag(explain)  # a check id is looked up in the registry, plugins included
    explain.set_defaults(handler=run_explain, settings_spec={"disable_plugins": None})
    listing = sub.add_parser("list-signatures", help="list the log failure signatures tpudoctor knows")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(handler=run_list)


def signature_info(signature_id: str) -> dict[str, Any]:
    """Everything the catalog says about one signature, as plain data."""
    from tpudoctor.logdiag import load_catalog

    catalog = load_catalog()
    try:
        sig = catalog.get(signature_id)
    except KeyError:
        close = difflib.get_close_matches(signature_id, catalog.ids(), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UsageError(f"no log signature {signature_id!r}",
                         hint=f"{hint}tpudoctor list-signatures shows them all") from None
    joins = [
        {"title": j.title, "when": _join_condition(j)}
        for j in catalog.node_joins if sig.id in j.signatures
    ]
    return {
        "id": sig.id,
        "title": sig.title,
        "layer": sig.layer,
        "result": "FAIL" if sig.fatal else "WARN",
        "severity": sig.severity.value,
        "meaning": sig.cause.replace("{", "<").replace("}", ">"),  # placeholders filled from the log
        "matches_any": [p.pattern for p in sig.any_patterns],
        "matches_all": [p.pattern for p in sig.all_patterns],
        "only_when_nothing_else_matches": sig.fallback,
        "evidence": list(dict.fromkeys([e.name for e in sig.extractors] + list(sig.parsers) + list(sig.context))),
        "supersedes": list(sig.supersedes),
        "fix": sig.remediation.text,
        "commands": list(sig.remediation.commands),
        "docs": sig.remediation.docs_url,
        "seen_in": sig.source,
        "node_state_retold_as": joins,
        "catalog_version": catalog.version,
    }


def _join_condition(join: Any) -> str:
    parts = []
    if join.states:
        parts.append("node state " + " or ".join(join.states))
    if join.healths:
        parts.append("node health " + " or ".join(join.healths))
    if join.symptoms:
        parts.append("node symptom " + " or ".join(join.symptoms))
    return "; ".join(parts)


def check_info(check_id: str, *, disabled_plugins: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """What the registry says about one check (None: no check has this id)."""
    from tpudoctor.families import load_registry

    cls = load_registry(disabled=disabled_plugins).checks.get(check_id)
    if cls is None:
        return None
    return {"id": cls.id, "title": cls.title, "step": int(cls.step), "step_label": cls.step.label,
            "runs_on": cls.runs_on, "checks": " ".join(cls.description().split()), "facts": list(cls.facts),
            "requires": list(cls.requires), "docs": cls.docs, "source": cls.source}


def run_explain(args: argparse.Namespace, settings=None) -> ExitCode:
    from tpudoctor.check import CHECK_ID_PATTERN

    if CHECK_ID_PATTERN.match(args.signature_id):
        check = check_info(args.signature_id, disabled_plugins=settings.disable_plugins if settings else ())
        if check is None:
            raise UsageError(f"no check {args.signature_id!r}", hint="tpudoctor list-checks shows them all")
        if args.format == "json":
            print(json.dumps({"schema_version": SCHEMA_VERSION, "check": check}, indent=2))
        else:
            print(_check_text(check))
        return ExitCode.OK
    info = signature_info(args.signature_id)
    if args.format == "json":
        print(json.dumps({"schema_version": SCHEMA_VERSION, "signature": info}, indent=2))
        return ExitCode.OK
    print(_explain_text(info))
    return ExitCode.OK


def _check_text(info: dict[str, Any]) -> str:
    where = ("a merged view of every worker's report (tpudoctor merge, check --all-workers)"
             if info["runs_on"] == "slice" else "tpudoctor check on one machine")
    lines = [f"{info['id']}: {info['title']}", f"  step {info['step']} ({info['step_label']}), runs on {where}", "",
             "What it checks", f"  {info['checks']}", "", f"Reads: {', '.join(info['facts'])}"]
    if info["requires"]:
        lines.append(f"Runs after: {', '.join(info['requires'])} (skipped when they fail)")
    lines += [f"Docs: {info['docs']}", f"Source: {info['source']}"]
    return "\n".join(lines)


def _explain_text(info: dict[str, Any]) -> str:
    lines = [f"{info['id']}: {info['title']}",
             f"  result {info['result']} ({info['severity']}), layer {info['layer']}", "",
             "What it means", f"  {info['meaning']}", "", "What it matches"]
    if info["only_when_nothing_else_matches"]:
        lines.append("  (only where no other signature matches)")
    lines += [f"  any of:  {p}" for p in info["matches_any"]]
    lines += [f"  and all: {p}" for p in info["matches_all"]]
    if info["evidence"]:
        lines.append(f"  evidence pulled from the log: {', '.join(info['evidence'])}")
    if info["supersedes"]:
        lines.append(f"  replaces: {', '.join(info['supersedes'])} (when both match one event)")
    lines += ["", "Fix", f"  {info['fix']}"]
    lines += [f"  $ {c}" for c in info["commands"]]
    lines.append(f"  docs: {info['docs']}")
    for join in info["node_state_retold_as"]:
        lines.append(f"  with {join['when']}: reported as \"{join['title']}\"")
    if info["seen_in"]:
        lines += ["", f"Seen in: {info['seen_in']}"]
    return "\n".join(lines)


def run_list(args: argparse.Namespace, settings=None) -> ExitCode:
    from tpudoctor.logdiag import load_catalog

    catalog = load_catalog()
    rows = [{"id": s.id, "title": s.title, "layer": s.layer, "result": "FAIL" if s.fatal else "WARN",
             "severity": s.severity.value} for s in catalog.signatures]
    if args.format == "json":
        print(json.dumps({"schema_version": SCHEMA_VERSION, "catalog_version": catalog.version,
                          "signatures": rows}, indent=2))
        return ExitCode.OK
    width = max(len(r["id"]) for r in rows)
    for row in rows:
        print(f"{row['id']:<{width}}  {row['result']}  {row['layer']:<9}  {row['title']}")
    print(f"\n{len(rows)} signatures (catalog version {catalog.version}); "
          "tpudoctor explain ID for one of them")
    return ExitCode.OK
