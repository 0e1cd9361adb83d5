"""What tpudoctor knows, as answers (``tpudoctor.answer.Answer``): ``explain ID`` (a log signature or a check:
what it means, what it matches, how to fix it), ``list-signatures`` and ``list-checks``."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Sequence
from typing import Any

from tpudoctor.answer import Answer
from tpudoctor.errors import UsageError

SCHEMA_VERSION = 1


@dataclasses.dataclass(frozen=True)
class CatalogOptions:
    disabled_plugins: tuple[str, ...] = ()
    """Plugins left out: their checks are neither listed nor explained."""

    @classmethod
    def from_args(cls, args: Any, settings: Any) -> CatalogOptions:
        return cls(disabled_plugins=tuple(settings.disable_plugins or ()))


def explain(inputs: Sequence[str], options: CatalogOptions, progress: Callable[[str], None] | None = None
            ) -> Answer:
    """What the signature or check ``inputs`` names means; an unknown id is a usage error."""
    from tpudoctor.check import CHECK_ID_PATTERN

    (wanted,) = inputs
    if CHECK_ID_PATTERN.match(wanted):
        check = check_info(wanted, disabled_plugins=options.disabled_plugins)
        if check is None:
            raise UsageError(f"no check {wanted!r}", hint="tpudoctor list-checks shows them all")
        return Answer({"schema_version": SCHEMA_VERSION, "check": check}, _check_text(check))
    info = signature_info(wanted)
    return Answer({"schema_version": SCHEMA_VERSION, "signature": info}, _explain_text(info))


def list_signatures(inputs: Sequence[str], options: CatalogOptions, progress: Callable[[str], None] | None = None
                    ) -> Answer:
    from tpudoctor.logdiag import load_catalog

    catalog = load_catalog()
    rows = [{"id": s.id, "title": s.title, "layer": s.layer, "result": "FAIL" if s.fatal else "WARN",
             "severity": s.severity.value} for s in catalog.signatures]
    width = max(len(r["id"]) for r in rows)
    lines = [f"{row['id']:<{width}}  {row['result']}  {row['layer']:<9}  {row['title']}" for row in rows]
    lines.append(f"\n{len(rows)} signatures (catalog version {catalog.version}); tpudoctor explain ID for one of them")
    return Answer({"schema_version": SCHEMA_VERSION, "catalog_version": catalog.version, "signatures": rows},
                  "\n".join(lines))


def list_checks(inputs: Sequence[str], options: CatalogOptions, progress: Callable[[str], None] | None = None
                ) -> Answer:
    """Every registered check by triage step: where it comes from and what it reads (text: a table)."""
    import io
    import shutil
    import sys

    from rich.console import Console
    from rich.table import Table

    from tpudoctor.families import load_registry

    rows: list[dict[str, Any]] = [{"id": c.id, "step": int(c.step), "step_label": c.step.label, "title": c.title,
             "requires": list(c.requires), "facts": list(c.facts), "timeout_s": c.timeout_s, "docs": c.docs,
             "source": c.source, "runs_on": c.runs_on}
            for c in load_registry(disabled=options.disabled_plugins).check_classes()]
    table = Table(title="tpudoctor checks", show_lines=False)
    for col in ("step", "id", "title", "requires", "source"):
        table.add_column(col)
    for row in rows:
        table.add_row(f"{row['step']} {row['step_label']}", row["id"], row["title"],
                      ", ".join(row["requires"]) or "-", row["source"])
    terminal = sys.stdout.isatty()
    text = io.StringIO()
    Console(file=text, force_terminal=terminal, width=shutil.get_terminal_size().columns if terminal else None
            ).print(table)
    return Answer({"checks": rows}, text.getvalue().rstrip("\n"))


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
