"""One module per sub-command. Each exposes ``register(subparsers)`` and stays light to import."""

from __future__ import annotations

from tpudoctor.commands import (
    bench_cmd,
    check_cmd,
    compare_cmd,
    diag_cmd,
    docs_cmd,
    explain_cmd,
    goodput_cmd,
    hang_cmd,
    list_checks_cmd,
    memory_cmd,
    merge_cmd,
    profile_cmd,
)

COMMANDS = [check_cmd, list_checks_cmd, profile_cmd, goodput_cmd, hang_cmd, compare_cmd, bench_cmd, diag_cmd, memory_cmd, merge_cmd, explain_cmd, docs_cmd]
