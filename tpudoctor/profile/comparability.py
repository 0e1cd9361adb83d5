"""Can two profile reports be compared at all? Their identities, side by side, before any number.

A different device kind, device count or host layout makes every figure incomparable (a v6e step
and a CPU step measure different machines): that is blocking. Different framework or libtpu
versions, step methods or step programs are exactly what a comparison may be meant to show, so
they are stated up front but do not block.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

MODULE_FINGERPRINT = re.compile(r"\((\d+)\)$")


@dataclasses.dataclass(frozen=True)
class CaptureIdentity:
    device_type: str | None
    """"tpu", "gpu" or "cpu"."""
    device_kind: str | None
    """As the device planes say, e.g. "TPU v6 Lite"; several kinds joined by " + "."""
    n_hosts: int | None
    n_devices: int | None
    """Device planes over all hosts (TPU: TensorCores the runtime exposes as devices)."""
    topology: str | None
    """Given by the report where known, else "<hosts>x<devices per host>"."""
    framework: str | None
    framework_version: str | None
    libtpu_version: str | None
    step_method: str | None
    step_program: str | None
    """The program whose runs are the steps, e.g. "jit_train_step(1219...)"."""

    @property
    def step_program_fingerprint(self) -> str | None:
        """The compiled program's id (the number XLA prints after the module name), else its name."""
        if not self.step_program:
            return None
        found = MODULE_FINGERPRINT.search(self.step_program)
        return found.group(1) if found else self.step_program


@dataclasses.dataclass(frozen=True)
class IdentityDifference:
    field: str
    baseline: Any
    candidate: Any
    blocking: bool
    message: str


@dataclasses.dataclass(frozen=True)
class Comparability:
    comparable: bool
    reasons: tuple[str, ...]
    """Why not, one sentence per blocking difference (empty when comparable)."""
    notes: tuple[str, ...]
    """Differences worth knowing that do not block (versions, step method, programs)."""
    differences: tuple[IdentityDifference, ...]
    unknown_fields: tuple[str, ...]
    """Fields neither or only one report states: not compared."""
    baseline: CaptureIdentity
    candidate: CaptureIdentity

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


BLOCKING_FIELDS = ("device_type", "device_kind", "n_devices", "n_hosts", "topology")
NOTED_FIELDS = ("framework", "framework_version", "libtpu_version", "step_method", "step_program_fingerprint")


# Version stats the profilers write on the /host:metadata plane -> what they version
VERSION_STATS = {"jax_version": "framework", "libtpu_version": "libtpu"}


def capture_versions(host) -> dict[str, str]:
    """Framework and libtpu versions a host's capture states on its planes (JAX writes
    ``jax_version``/``jaxlib_version`` and, on TPU, ``libtpu_version`` on ``/host:metadata``):
    ``{"framework": ..., "libtpu": ...}`` with only the keys found."""
    found: dict[str, str] = {}
    for stats in host.plane_stats.values():
        for stat, kind in VERSION_STATS.items():
            value = stats.get(stat)
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            if isinstance(value, str) and value and kind not in found:
                found[kind] = value
    return found


def identity_from_document(document: Mapping[str, Any], versions: Mapping[str, str] | None = None) -> CaptureIdentity:
    """The identity of a profile report (``tpudoctor profile analyze --format json`` or ``analyze().to_dict()``).

    ``versions`` (``capture_versions`` of the primary host) fills what the document does not state."""
    summary = document.get("summary") or {}
    kinds = [str(k) for k in summary.get("device_kinds") or [] if k]
    hosts = summary.get("hosts") or []
    n_hosts = summary.get("n_hosts") if isinstance(summary.get("n_hosts"), int) else (len(hosts) or None)
    n_devices = sum(int(h.get("n_device_planes") or 0) for h in hosts) if hosts else None
    device_type = document.get("device")
    if device_type == "cpu":
        n_devices = n_devices or 0  # XLA on CPU runs on the host threads: no device planes
        kinds = kinds or ["CPU"]
    topology = document.get("topology")
    if not topology and n_hosts and n_devices is not None:
        topology = f"{n_hosts}x{n_devices // n_hosts if n_hosts else n_devices}"
    steps = document.get("steps") or {}
    versions = {**(versions or {}), **(document.get("versions") or {})}
    return CaptureIdentity(
        device_type=device_type, device_kind=" + ".join(sorted(set(kinds))) or None, n_hosts=n_hosts,
        n_devices=n_devices, topology=topology, framework=document.get("framework"),
        framework_version=document.get("framework_version") or versions.get("framework"),
        libtpu_version=document.get("libtpu_version") or versions.get("libtpu"),
        step_method=steps.get("method"), step_program=steps.get("program"),
    )


def check_comparability(baseline: CaptureIdentity, candidate: CaptureIdentity) -> Comparability:
    """Compare the identities of two captures; a blocking difference makes them not comparable."""
    differences: list[IdentityDifference] = []
    unknown: list[str] = []
    for field in (*BLOCKING_FIELDS, *NOTED_FIELDS):
        a, b = getattr(baseline, field), getattr(candidate, field)
        if a is None or b is None or a == "unknown" or b == "unknown":
            if a != b:
                unknown.append(field)
            continue
        if a == b:
            continue
        blocking = field in BLOCKING_FIELDS
        differences.append(IdentityDifference(field, a, b, blocking, _message(field, a, b)))
    reasons = tuple(d.message for d in differences if d.blocking)
    notes = tuple(d.message for d in differences if not d.blocking)
    return Comparability(comparable=not reasons, reasons=reasons, notes=notes, differences=tuple(differences),
                         unknown_fields=tuple(unknown), baseline=baseline, candidate=candidate)


def compare_documents(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> Comparability:
    return check_comparability(identity_from_document(baseline), identity_from_document(candidate))


_WORDS = {
    "device_type": "device type", "device_kind": "device kind", "n_devices": "number of devices",
    "n_hosts": "number of hosts", "topology": "topology (hosts x devices per host)", "framework": "framework",
    "framework_version": "framework version", "libtpu_version": "libtpu version", "step_method": "step method",
    "step_program_fingerprint": "step program",
}


def _message(field: str, a: Any, b: Any) -> str:
    if field in BLOCKING_FIELDS:
        return (f"different {_WORDS[field]}: {a} in the baseline, {b} in the candidate; step times and "
                "utilisation of different hardware are not comparable")
    if field == "step_program_fingerprint":
        return (f"the steps run a different compiled program ({a} vs {b}): the model or its compilation "
                "changed, so op-level changes are expected")
    if field == "step_method":
        return f"steps were found differently ({a} vs {b}): step times may be measured differently"
    return f"different {_WORDS[field]}: {a} vs {b}"
