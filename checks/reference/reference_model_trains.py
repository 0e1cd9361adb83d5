from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import CheckResult, Severity, Status, Step

_DEVICE = {"platform": "TPU", "device_kind": "TPU v4", "device_count": 4, "accelerator_type": "v4-8",
           "topology": "2x2x1", "host_count": 1}
_RESULT = {
    "model": "dense", "device": _DEVICE, "global_batch_size": 512, "per_replica_batch_size": 128,
    "compile_time_ms": 2140.0, "examples_per_s_median": 910000.0, "step_time_ms_median": 0.56,
    "loss_start": 26.7, "loss_end": 0.35, "loss_dropped": True,
    "versions": {"tensorflow": "2.16.1", "libtpu": None, "python": "3.10.12"},
}
_RUN = {"model": "dense", "command": ["python", "-m", "tpudoctor.reference_models.run", "--model", "dense"],
        "started": True, "start_error": None, "returncode": 0, "timed_out": False, "timeout_s": 300.0,
        "duration_s": 31.0, "result": _RESULT, "error": None, "compile": {"compile_time_ms": 2140.0},
        "output_tail": ""}
_BUSY_TPU = ("RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process "
             "with pid 4242. Not attempting to load libtpu.so in this process.")

RUN_BY_HAND = "python -m tpudoctor.reference_models.run --model {model}"
OUTPUT_EVIDENCE_LINES = 30


class ReferenceModelTrains(Check):
    """A one-dense-layer model trains end to end on this machine's accelerator and its loss drops.

    The guide's step 5: simplify until it works. When the smoke model trains, the device, the
    runtime and the training loop are sound, and the fault is in the job's own model or data;
    when it does not, the error is classified through the step 4 log catalog.
    """

    id = "REFERENCE-001"
    title = "Minimal reference model trains"
    step = Step.REFERENCE
    requires = ("RUNTIME-001",)
    facts = ("reference.run",)
    severity = Severity.CRITICAL
    timeout_s = 10.0
    docs = "https://cloud.google.com/tpu/docs/run-calculation-tensorflow"
    examples = (
        Example("dense trains on a v4-8", {"reference.run": _RUN}, Status.PASS),
        Example("the loss did not drop", {"reference.run": {
            **_RUN, "returncode": 1, "result": {**_RESULT, "loss_end": 27.1, "loss_dropped": False}}}, Status.FAIL),
        Example("the TPU is held by another process", {"reference.run": {
            **_RUN, "returncode": 3, "result": None, "error": {"type": "RuntimeError", "message": _BUSY_TPU},
            "output_tail": _BUSY_TPU}}, Status.FAIL),
        Example("the run hung and was stopped", {"reference.run": {
            **_RUN, "returncode": -9, "timed_out": True, "result": None, "output_tail": "Compiling ..."}}, Status.FAIL),
        Example("the interpreter could not start", {"reference.run": {
            **_RUN, "started": False, "returncode": None, "result": None,
            "start_error": "FileNotFoundError: [Errno 2] No such file or directory: '/opt/venv/bin/python'"}},
            Status.FAIL),
        Example("TensorFlow is not installed", {"reference.run": Unavailable("TensorFlow is not installed")},
                Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        run = facts.require("reference.run")
        model = run.get("model", "dense")
        by_hand = RUN_BY_HAND.format(model=model)
        result = run.get("result")
        evidence: dict[str, Any] = {"model": model, "returncode": run.get("returncode"),
                                    "duration_s": run.get("duration_s"), "command": run.get("command")}
        if result is not None and result.get("loss_dropped"):
            return self.passed(self._success_message(result), evidence={**evidence, **self._figures(result)})

        from tpudoctor.bench.failure import diagnose_output, diagnosis_to_dict
        from tpudoctor.logdiag import cause_of

        diagnoses = diagnose_output(run.get("output_tail") or "", source=f"reference model {model}")
        evidence["diagnoses"] = [diagnosis_to_dict(d) for d in diagnoses]
        tail = (run.get("output_tail") or "").splitlines()[-OUTPUT_EVIDENCE_LINES:]
        if tail:
            evidence["output_tail"] = "\n".join(tail)
        if not run.get("started"):
            message = f"the reference model could not start: {run.get('start_error')}"
        elif result is not None:
            evidence.update(self._figures(result))
            message = (f"{model} ran but its loss did not drop ({result['loss_start']:.4g} -> "
                       f"{result['loss_end']:.4g}): the training loop or the device computes wrong results")
        elif run.get("timed_out"):
            message = f"{model} did not finish within {run.get('timeout_s'):g}s and was stopped"
        elif run.get("error"):
            error = run["error"]
            first_line = (error.get("message") or "").strip().splitlines()[:1]
            message = f"{model} failed: {error.get('type')}: {first_line[0][:300] if first_line else ''}".rstrip(": ")
        else:
            message = f"{model} exited with status {run.get('returncode')} without a result"
        if diagnoses:
            top = diagnoses[0]
            message += f" (log catalog: {top.id} {top.title})"
            fix = top.remediation
            if fix is not None and (fix.text or fix.commands):
                return self.fail(message, evidence=evidence,
                                 remediation=remediation(fix.text or cause_of(top), *fix.commands, by_hand,
                                                         docs_url=fix.docs_url))
        return self.fail(message, evidence=evidence, remediation=remediation(
            "Run the reference model by hand and read its full output; if the smoke model fails, the fault is "
            "in the TPU runtime or the framework install rather than in your model.", by_hand))

    @staticmethod
    def _figures(result: dict[str, Any]) -> dict[str, Any]:
        device = result.get("device") or {}
        return {
            "device_kind": device.get("device_kind"), "device_count": device.get("device_count"),
            "accelerator_type": device.get("accelerator_type"),
            "global_batch_size": result.get("global_batch_size"),
            "examples_per_s": result.get("examples_per_s_median"),
            "compile_time_ms": result.get("compile_time_ms"),
            "step_time_ms": result.get("step_time_ms_median"),
            "loss_start": result.get("loss_start"), "loss_end": result.get("loss_end"),
            "versions": result.get("versions"),
        }

    @staticmethod
    def _success_message(result: dict[str, Any]) -> str:
        device = result.get("device") or {}
        return (f"{result.get('model', 'dense')} trained on {device.get('device_kind')} x{device.get('device_count')}: "
                f"{result['examples_per_s_median']:,.0f} examples/s, compile {result['compile_time_ms']:,.0f} ms, "
                f"loss {result['loss_start']:.4g} -> {result['loss_end']:.4g}")
