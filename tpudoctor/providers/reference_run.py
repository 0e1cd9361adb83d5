"""Step 5's fact: a reference model trained in a subprocess, with a hard timeout.

Costly (seconds to minutes), so it is gathered only when a step 5 check runs: the runner
gathers the facts of the checks it is about to run, and a blocked or unselected step 5 never
asks for ``reference.run``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.provider import FactProvider

# Short on purpose: step 5 proves the path works, ``tpudoctor bench`` measures it.
TRIAGE_STEPS_PER_WINDOW = 10
TRIAGE_WINDOWS = 3
# Seconds kept back from the run's deadline so the check itself still gets to report.
DEADLINE_MARGIN_S = 5.0


class ReferenceRunProvider(FactProvider):
    name = "reference_run"
    provides = ("reference.run",)
    timeout_s = 600.0  # the subprocess has its own, shorter timeout (options.reference_timeout_s)

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        from tpudoctor.bench.launch import RunRequest, launch, tensorflow_installed
        from tpudoctor.reference_models import MODEL_NAMES

        model = ctx.options.reference_model
        if model not in MODEL_NAMES:
            raise ValueError(f"unknown reference model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
        if not tensorflow_installed():
            return {"reference.run": Unavailable(
                "TensorFlow is not installed in this Python, so the reference model cannot run "
                "(pip install 'tpudoctor[tf]', or use the TPU runtime's TensorFlow)")}
        timeout_s = min(ctx.options.reference_timeout_s, max(1.0, ctx.remaining_s() - DEADLINE_MARGIN_S))
        request = RunRequest(model=model, steps=TRIAGE_STEPS_PER_WINDOW, repeats=TRIAGE_WINDOWS)
        outcome = launch(request, timeout_s=timeout_s)
        return {"reference.run": {"model": model, **outcome.to_fact()}}
