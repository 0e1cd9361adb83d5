"""``tpudoctor list-checks``: every registered check, where it comes from and what it reads."""

from __future__ import annotations

import argparse
import json

from tpudoctor.commands.common import add_plugin_flag
from tpudoctor.exitcodes import ExitCode
from tpudoctor.formats import LIST_FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("list-checks", help="list the registered checks by triage step")
    parser.add_argument("--format", choices=LIST_FORMATS, default=None,
                        help="text or json (default: $TPUDOCTOR_FORMAT, the config file's format, or text)")
    add_plugin_flag(parser)
    parser.set_defaults(handler=run, settings_spec={"format": "text", "disable_plugins": None})


def run(args: argparse.Namespace, settings) -> ExitCode:
    from tpudoctor.families import load_registry

    fmt = settings.format_for(LIST_FORMATS)
    registry = load_registry(disabled=settings.disable_plugins)
    rows = [
        {
            "id": c.id, "step": int(c.step), "step_label": c.step.label, "title": c.title,
            "requires": list(c.requires), "facts": list(c.facts), "timeout_s": c.timeout_s,
            "docs": c.docs, "source": c.source, "runs_on": c.runs_on,
        }
        for c in registry.check_classes()
    ]
    if fmt == "json":
        print(json.dumps({"checks": rows}, indent=2))
        return ExitCode.OK
    from rich.console import Console
    from rich.table import Table

    table = Table(title="tpudoctor checks", show_lines=False)
    for col in ("step", "id", "title", "requires", "source"):
        table.add_column(col)
    for row in rows:
        table.add_row(f"{row['step']} {row['step_label']}", row["id"], row["title"],
                      ", ".join(row["requires"]) or "-", row["source"])
    Console().print(table)
    return ExitCode.OK
