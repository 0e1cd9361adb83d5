"""The user's own inputs as facts, so checks can reason about them without seeing the context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.provider import FactProvider


class OptionsProvider(FactProvider):
    name = "options"
    provides = (
        "options.target",
        "options.data_paths",
        "options.checkpoint_dirs",
        "options.log_dirs",
        "options.log_files",
        "options.since_s",
        "options.probe",
        "options.write_probe",
        "options.reference_model",
    )
    timeout_s = 1.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        o = ctx.options
        return {
            "options.target": ctx.target.to_dict(),
            "options.data_paths": list(o.data_paths),
            "options.checkpoint_dirs": list(o.checkpoint_dirs),
            "options.log_dirs": list(o.log_dirs),
            "options.log_files": list(o.log_files),
            "options.since_s": o.since_s,
            "options.probe": o.probe,
            "options.write_probe": o.write_probe,
            "options.reference_model": o.reference_model,
        }
