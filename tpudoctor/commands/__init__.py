"""One module per sub-command (or a few related ones). Each exposes ``register(subparsers)`` and its
``Product`` description(s), and stays light to import."""

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
    memory_cmd,
    merge_cmd,
    profile_cmd,
)

COMMANDS = [check_cmd.register, explain_cmd.register_list_checks, profile_cmd.register, goodput_cmd.register,
            hang_cmd.register, compare_cmd.register, bench_cmd.register, diag_cmd.register, memory_cmd.register,
            merge_cmd.register, explain_cmd.register, docs_cmd.register]
"""``register(subparsers)`` of each sub-command, in the order ``tpudoctor --help`` lists them."""
