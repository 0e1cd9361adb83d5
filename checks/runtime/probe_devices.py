from __future__ import annotations

from typing import Any

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.findings import CheckResult, Finding, Remediation, Severity, Status, Step
from tpudoctor.runtime_compat import load_compat

_BUSY = ("tpu-in-use", "libtpu-in-use")
_V4 = {"runtime_version": "tpu-ubuntu2204-base", "accelerator_type": "v4-8", "generation": "v4",
       "on_tpu_vm": True, "source": "metadata.tpu_vm"}


def _jax(platform: str, count: int) -> dict[str, Any]:
    return {"framework": "jax", "ok": True, "version": "0.7.2", "platform": platform,
            "local_device_count": count, "device_count": count, "timed_out": False}


class FrameworksSeeTpuDevices(Check):
    """With --probe: JAX (jax.devices()) and TensorFlow (TPUClusterResolver(tpu='local'),
    initialize_tpu_system, list_logical_devices('TPU')) start in a subprocess and list as many
    TPU devices as this host of the accelerator type should have."""

    id = "RUNTIME-009"
    title = "Frameworks see the TPU devices"
    step = Step.RUNTIME
    facts = ("runtime.probe", "runtime.target")
    severity = Severity.CRITICAL
    timeout_s = 10.0
    docs = "https://cloud.google.com/tpu/docs/run-calculation-jax"
    examples = (
        Example("v4-8, 4 devices", {"runtime.probe": {"jax": _jax("tpu", 4)}, "runtime.target": _V4}, Status.PASS),
        Example("jax on cpu", {"runtime.probe": {"jax": _jax("cpu", 1)}, "runtime.target": _V4}, Status.FAIL),
        Example("two devices missing", {"runtime.probe": {"jax": _jax("tpu", 2)}, "runtime.target": _V4}, Status.FAIL),
        Example("TPU held by the running job", {"runtime.probe": {"jax": {
            "framework": "jax", "ok": False, "error": "RuntimeError: Unable to initialize backend 'tpu'",
            "diagnosis": {"id": "tpu-in-use", "kind": "log", "step": 4, "title": "TPU already in use",
                          "status": "FAIL", "message": "jax probe stderr:3: another process holds the TPU",
                          "evidence": {"pid": 4242},
                          "remediation": {"text": "stop it", "commands": [], "docs_url": None}}}},
            "runtime.target": _V4}, Status.WARN),
        Example("plain machine", {"runtime.probe": {"jax": _jax("cpu", 1)},
                                  "runtime.target": Unavailable("not a TPU VM")}, Status.SKIP),
        Example("not requested", {"runtime.probe": Unavailable("add --probe"), "runtime.target": _V4}, Status.SKIP),
    )

    def evaluate(self, facts: Facts) -> CheckResult:
        probes = facts.require("runtime.probe")
        target = facts.value("runtime.target") or {}
        accelerator = load_compat().accelerator(target.get("accelerator_type")) if target.get("on_tpu_vm") else None
        evidence: dict[str, Any] = {"probes": {k: {f: v for f, v in p.items() if f != "stderr_tail"}
                                               for k, p in probes.items()}}
        if accelerator is not None:
            evidence.update(accelerator_type=accelerator.accelerator_type,
                            expected_local_devices=accelerator.local_devices, hosts=accelerator.hosts)
        problems: list[tuple[str, Remediation | None]] = []
        busy: list[str] = []
        seen: list[str] = []
        for name, probe in probes.items():
            diagnosis = Finding.from_dict(probe["diagnosis"]) if probe.get("diagnosis") else None
            fix = diagnosis.remediation if diagnosis else None
            if diagnosis and diagnosis.id in _BUSY:
                pid = diagnosis.evidence.get("pid")
                busy.append(f"{name} could not open the TPU: it is in use" + (f" by pid {pid}" if pid else ""))
                continue
            if not probe.get("ok"):
                why = probe.get("error", "failed")
                if diagnosis:
                    why += f" ({diagnosis.title})"
                if probe.get("timed_out") and accelerator is not None and accelerator.hosts > 1:
                    why += f"; {accelerator.accelerator_type} has {accelerator.hosts} hosts and the framework waits for all of them"
                problems.append((f"{name} {why}", fix))
                continue
            count, platform = probe.get("local_device_count", 0), probe.get("platform")
            seen.append(f"{name} lists {count} {platform} device(s)")
            if accelerator is None:
                continue
            if platform != "tpu":
                detail = probe.get("tpu_init_error") or (diagnosis or {}).get("title") or "no TPU backend"
                problems.append((f"{name} runs on the CPU, not the TPU: {detail}", fix or remediation(
                    "Install the TPU build of the framework.", 'pip install -U "jax[tpu]"', "pip install tensorflow-tpu")))
                continue
            allowed = {accelerator.local_devices}
            if name == "tensorflow":
                allowed.add(accelerator.local_cores)  # TensorFlow lists TensorCores on some generations
            if count not in allowed:
                problems.append((f"{name} lists {count} TPU device(s); one host of {accelerator.accelerator_type} "
                                 f"should have {accelerator.local_devices}", fix or remediation(
                    "Check that no other process holds some chips and that TPU_VISIBLE_CHIPS is unset.",
                    "tpu-info --process", "env | grep -E '^TPU_(VISIBLE_CHIPS|PROCESS_BOUNDS)'")))
        if busy and not problems:
            return self.warn(
                "; ".join(busy) + " (a running job holds it, so the probe cannot list devices)",
                evidence=evidence,
                remediation=remediation("Run the probe when no job holds the TPU, or check the holder is your job.",
                                        "tpu-info --process"),
            )
        if problems:
            message, fix = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return self.fail(message + more, evidence=evidence,
                             remediation=fix or remediation("Read the probe's error in the evidence."))
        if accelerator is None:
            reason = target.get("accelerator_type") and "the accelerator type is not in tpudoctor's table" \
                or "not a TPU VM, so no TPU devices are expected"
            return self.skip(f"{reason}: {'; '.join(seen)}", evidence=evidence)
        return self.passed(f"{'; '.join(seen)} (expected {accelerator.local_devices} on one host of "
                           f"{accelerator.accelerator_type})", evidence=evidence)
