"""The preflight: compile a program for a TPU topology, say whether it fits and what fills the peak, then apply
each fix, recompile it and rank the fixes by what the compiler says they save.

    from tpudoctor.preflight import preflight
    report = preflight("train.py:make_step", "v5e:2x2", mesh={"data": 2, "model": 2})
    report.fits, report.headroom_bytes, report.fixes[0].label

Every figure is the compiler's: ``memory_analysis()`` where the compile succeeds, the buffer assignment it dumps
where it does not (``*.after_optimizations.hlo.pb``, decoded by ``tpudoctor.captures.hlo``) and its
out-of-memory text. Without libtpu the report is a SKIP saying what to install (``skipped``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.memory.attribution import Attribution, attribute, attribute_heap_peak
from tpudoctor.preflight import compiler
from tpudoctor.preflight import fixes as fix_makers
from tpudoctor.preflight.program import abstract_args, knob_changes, load_factory
from tpudoctor.preflight.verdict import preflight_verdict
from tpudoctor.units import format_bytes

TOP_BUFFERS = 10
VERIFIED_FIXES = 1
"""Fixes compiled again at the compiler's default effort, best first (the others at its least effort)."""
EXTRA_VERIFICATIONS = 2
"""More verifications, at most, while the best-ranked fix is one only screened."""
DOCUMENT_KIND = "memory-preflight"


@dataclasses.dataclass
class FixResult:
    """One fix applied and recompiled."""

    name: str
    kind: str
    description: str
    fits: bool
    total_bytes: int | None
    compiled_saving_bytes: int | None
    predicted_saving_bytes: int | None
    prediction_basis: str
    seconds: float
    error: str = ""
    limit_bytes: int | None = None
    plan_peak_bytes: int | None = None
    """The peak of the buffer assignment it compiled to (what the attribution of it sums to)."""
    plan_summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The buffer assignment's figures (``ProgramPlan.summary``: argument, output, alias, temp bytes)."""
    stats: dict[str, int] = dataclasses.field(default_factory=dict)
    """memory_analysis()'s fields where the compile succeeded."""
    effort: str = "default"
    """The compiler's effort it was compiled at: ``default``, or ``EFFORT_O0`` (screened, not verified)."""

    @property
    def prediction_error(self) -> float | None:
        """|predicted - compiled| / compiled saving."""
        if self.predicted_saving_bytes is None or not self.compiled_saving_bytes:
            return None
        return abs(self.predicted_saving_bytes - self.compiled_saving_bytes) / abs(self.compiled_saving_bytes)

    @property
    def label(self) -> str:
        if self.total_bytes is None:
            return f"did not compile: {first_line(self.error)}"
        limit = f" of {self.limit_bytes / (1 << 30):.2f}" if self.limit_bytes else ""
        verdict = "fits" if self.fits else "does not fit"
        screened = "" if self.effort == "default" else f" (screened at {self.effort})"
        return f"compiled: {verdict} at {self.total_bytes / (1 << 30):.2f}{limit} GiB{screened}"

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["label"] = self.label
        out["prediction_error"] = None if self.prediction_error is None else round(self.prediction_error, 4)
        out["seconds"] = round(self.seconds, 2)
        return out


@dataclasses.dataclass
class TopologyTry:
    topology: str
    devices: int
    fits: bool
    total_bytes: int | None
    limit_bytes: int | None
    error: str = ""


@dataclasses.dataclass
class PreflightReport:
    program: str
    topology: str
    device_kind: str = ""
    devices: int = 0
    mesh: dict[str, int] = dataclasses.field(default_factory=dict)
    knobs: dict[str, Any] = dataclasses.field(default_factory=dict)
    skipped: str = ""
    """Why nothing was compiled (libtpu missing): the SKIP's reason."""
    fits: bool | None = None
    limit_bytes: int | None = None
    total_bytes: int | None = None
    required_bytes: int | None = None
    """What the compiler's out-of-memory text says the program needs (where it does not fit)."""
    memory_space: str = ""
    """The memory the compiler ran out of: ``hbm``, ``vmem`` (a kernel's scoped memory)..."""
    plan_summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The buffer assignment's figures (``ProgramPlan.summary``)."""
    stats: dict[str, int] = dataclasses.field(default_factory=dict)
    error: str = ""
    attribution: Attribution | None = None
    largest_buffers: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    fixes: list[FixResult] = dataclasses.field(default_factory=list)
    topologies: list[TopologyTry] = dataclasses.field(default_factory=list)
    smallest_fitting_topology: str | None = None
    compile_seconds: float = 0.0
    duration_s: float = 0.0
    refusal: Exception | None = dataclasses.field(default=None, compare=False, repr=False)
    """Raised once the report is written: the program does not compile at all (``tpudoctor.preflight.product``)."""

    kind = DOCUMENT_KIND

    @property
    def results(self) -> list[Finding]:
        """What the exit status is judged on: a FAIL where the program was compiled and does not fit (one that
        does not compile is the ``refusal``)."""
        verdict = preflight_verdict(self.to_dict())
        return [verdict] if verdict.status is Status.FAIL else []

    @property
    def headroom_bytes(self) -> int | None:
        if self.limit_bytes is None or self.total_bytes is None:
            return None
        return self.limit_bytes - self.total_bytes

    @property
    def fitting_fixes(self) -> list[FixResult]:
        return [f for f in self.fixes if f.fits]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": DOCUMENT_KIND, "program": self.program, "topology": self.topology,
            "device_kind": self.device_kind, "devices": self.devices, "mesh": dict(self.mesh),
            "knobs": {k: repr(v) for k, v in self.knobs.items()}, "skipped": self.skipped, "fits": self.fits,
            "limit_bytes": self.limit_bytes, "total_bytes": self.total_bytes, "headroom_bytes": self.headroom_bytes,
            "required_bytes": self.required_bytes, "memory_space": self.memory_space,
            "stats": dict(self.stats), "plan": dict(self.plan_summary), "error": self.error,
            "attribution": None if self.attribution is None else self.attribution.to_dict(),
            "largest_buffers": self.largest_buffers, "fixes": [f.to_dict() for f in self.fixes],
            "topologies": [dataclasses.asdict(t) for t in self.topologies],
            "smallest_fitting_topology": self.smallest_fitting_topology,
            "compile_seconds": round(self.compile_seconds, 2), "duration_s": round(self.duration_s, 2)}


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def preflight(program: str | Callable[..., Any], topology: str | Sequence[str], *,
              mesh: Mapping[str, int] | None = None, knobs: Mapping[str, list[Any]] | None = None,
              settings: Mapping[str, Any] | None = None,
              apply_fixes: bool = True, verify: int | None = VERIFIED_FIXES,
              progress: Callable[[str], None] | None = None) -> PreflightReport:
    """Compile ``program`` (``FILE.py:FACTORY`` or the factory) for ``topology`` (the first of several; the others
    are tried, smallest first, where it does not fit), attribute its peak, and, where it does not fit, apply and
    recompile each fix.

    Every fix is compiled at the compiler's least effort (``compiler.FAST_EFFORT``, a tenth of the time) and the
    ``verify`` best (None: all) again at its default effort; each fix's saving is against the baseline compiled
    at the same effort. ``settings``: the knobs' values of the program as compiled (the factory's defaults
    otherwise); ``knobs``: the values to try as fixes."""
    start = time.perf_counter()
    topologies = [topology] if isinstance(topology, str) else list(topology)
    name = program if isinstance(program, str) else getattr(program, "__qualname__", repr(program))
    report = PreflightReport(program=name, topology=topologies[0], mesh=dict(mesh or {}), knobs=dict(settings or {}))
    missing = compiler.compiler_missing()
    if missing:
        report.skipped = missing
        return report
    compiler.prepare_environment()
    factory = load_factory(program) if isinstance(program, str) else program
    if settings:
        factory = with_settings(factory, settings)
    say = progress or (lambda _message: None)

    devices = compiler.topology_devices(topologies[0])
    jax_mesh = compiler.build_mesh(devices, mesh)
    report.device_kind, report.devices = devices[0].device_kind, len(devices)
    report.mesh = dict(jax_mesh.shape)
    report.limit_bytes = compiler.hbm_limit_bytes(devices)
    step, raw_args = factory(jax_mesh)
    args = abstract_args(raw_args, jax_mesh)
    say(f"compiling {name} for {topologies[0]}")
    base = compiler.compile_for_topology(step, args)
    report.compile_seconds += base.seconds
    report.fits, report.stats, report.error = base.fits, base.stats, base.error
    report.total_bytes, report.required_bytes = base.total_bytes, base.required_bytes
    report.memory_space = base.memory_space
    report.limit_bytes = base.available_bytes or report.limit_bytes
    if base.plan is None:
        if not base.out_of_memory and base.error:
            report.duration_s = time.perf_counter() - start
            return report  # the program does not compile: the compiler's text is the finding
    else:
        report.plan_summary = base.plan.summary()
        # a program that compiled: its peak as memory_analysis() counts it (the heap's live bytes at its peak);
        # one that does not fit: what the compiler's out-of-memory text counts (every allocation whole)
        report.attribution = attribute_heap_peak(base.plan) if base.fits else attribute(base.plan)
        report.largest_buffers = largest_buffers(report.attribution)
    if apply_fixes and report.attribution is not None and not report.fits:
        apply_and_compile(factory, jax_mesh, step, args, report, knobs, verify, say)
    if not report.fits and len(topologies) > 1:
        smallest_fit(factory, topologies[1:], mesh, report, say)
    report.duration_s = time.perf_counter() - start
    return report


def with_settings(factory: Callable[..., Any], settings: Mapping[str, Any]) -> Callable[..., Any]:
    """``factory`` with ``settings`` as its keywords' defaults (the program as compiled; the knob fixes change one)."""
    import functools
    import inspect

    from tpudoctor.errors import UsageError
    from tpudoctor.preflight.program import KNOBS_ATTRIBUTE, knob_defaults

    unknown = sorted(set(settings) - set(knob_defaults(factory)))
    if unknown:
        raise UsageError(f"--set {', '.join(unknown)}: the factory takes no such keyword argument")
    bound = functools.partial(factory, **settings)
    signature = inspect.signature(factory)
    bound.__signature__ = signature.replace(parameters=[  # type: ignore[attr-defined]
        p.replace(default=settings[p.name]) if p.name in settings else p for p in signature.parameters.values()])
    setattr(bound, KNOBS_ATTRIBUTE, getattr(factory, KNOBS_ATTRIBUTE, None))
    return bound


def candidates(factory, mesh, step, args: tuple, attribution: Attribution,
               knobs: Mapping[str, list[Any]] | None) -> list[fix_makers.Candidate]:
    out: list[fix_makers.Candidate | None] = [
        fix_makers.donate(step, args), fix_makers.bf16(step, args, attribution),
        *fix_makers.shard(step, args, mesh, attribution), fix_makers.offload(step, args, attribution)]
    out.extend(fix_makers.knob(factory, mesh, change, step, args, attribution)
               for change in knob_changes(factory, dict(knobs or {})))
    return [c for c in out if c is not None]


def apply_and_compile(factory, mesh, step, args: tuple, report: PreflightReport,
                      knobs: Mapping[str, list[Any]] | None, verify: int | None, say: Callable[[str], None]) -> None:
    """Each fix compiled at the least effort, ranked, the best ``verify`` compiled again at the default effort."""
    assert report.attribution is not None
    fast = compiler.compile_for_topology(step, args, effort=compiler.FAST_EFFORT)
    report.compile_seconds += fast.seconds
    baselines = {"default": report.total_bytes, compiler.FAST_EFFORT: fast.total_bytes}
    screened = []
    found = candidates(factory, mesh, step, args, report.attribution, knobs)
    if report.memory_space not in ("", "hbm"):  # a kernel's scoped memory: only the program's own knobs reach it
        found = [c for c in found if c.kind == "knob"]
    for candidate in found:
        say(f"compiling with fix {candidate.name}")
        screened.append((candidate, try_fix(candidate, report, baselines, compiler.FAST_EFFORT)))
        report.compile_seconds += screened[-1][1].seconds
    # verify the best screened fixes at the default effort, and go on while the best of the ranking is one that
    # was only screened (a verified figure can rank a fix lower), a few more at most
    limit = len(screened) if verify is None else min(len(screened), verify + EXTRA_VERIFICATIONS)
    verified: set[int] = set()
    while len(verified) < limit:
        order = sorted(range(len(screened)), key=lambda i: rank_key(screened[i][1]))
        pending = [i for i in order if i not in verified and screened[i][1].total_bytes is not None]
        if not pending or (verify is not None and len(verified) >= verify and order[0] in verified):
            break
        i = pending[0]
        candidate = screened[i][0]
        say(f"verifying fix {candidate.name} at the compiler's default effort")
        screened[i] = (candidate, try_fix(candidate, report, baselines, None))
        report.compile_seconds += screened[i][1].seconds
        verified.add(i)
    report.fixes = sorted((result for _, result in screened), key=rank_key)


def rank_key(fix: FixResult) -> tuple:
    """Fixes that fit first, then by compiled saving, verified before screened at equal standing."""
    return (not fix.fits, -(fix.compiled_saving_bytes or 0))


def try_fix(candidate: fix_makers.Candidate, report: PreflightReport, baselines: Mapping[str, int | None],
            effort: str | None) -> FixResult:
    started = time.perf_counter()
    try:
        step, args, donate = candidate.build()
        result = compiler.compile_for_topology(step, args, donate_argnums=donate, effort=effort)
    except Exception as exc:  # noqa: BLE001 - a fix the program does not take is reported, not raised
        return FixResult(candidate.name, candidate.kind, candidate.description, False, None, None,
                         candidate.predicted_saving_bytes, candidate.prediction_basis,
                         time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}",
                         limit_bytes=report.limit_bytes, effort=effort or "default")
    total = result.total_bytes
    base = baselines.get(result.effort)
    saving = None if total is None or base is None else base - total
    return FixResult(candidate.name, candidate.kind, candidate.description, result.fits, total, saving,
                     candidate.predicted_saving_bytes, candidate.prediction_basis, result.seconds,
                     error=result.error, limit_bytes=result.available_bytes or report.limit_bytes,
                     plan_peak_bytes=result.plan.peak_bytes if result.plan is not None else None,
                     plan_summary=result.plan.summary() if result.plan is not None else {}, stats=result.stats,
                     effort=result.effort)


def smallest_fit(factory, topologies: Sequence[str], mesh: Mapping[str, int] | None, report: PreflightReport,
                 say: Callable[[str], None]) -> None:
    """Compile the program on each other topology asked (fewest devices first); the first that fits."""
    tries = []
    for topology in topologies:
        devices = compiler.topology_devices(topology)
        tries.append((len(devices), topology, devices))
    for count, topology, devices in sorted(tries, key=lambda t: t[0]):
        jax_mesh = compiler.build_mesh(devices, scaled_mesh(mesh, count))
        step, raw_args = factory(jax_mesh)
        say(f"compiling for {topology}")
        result = compiler.compile_for_topology(step, abstract_args(raw_args, jax_mesh))
        report.compile_seconds += result.seconds
        report.topologies.append(TopologyTry(topology, count, result.fits, result.total_bytes,
                                             result.available_bytes or compiler.hbm_limit_bytes(devices),
                                             first_line(result.error)))
        if result.fits:
            report.smallest_fitting_topology = topology
            return


def scaled_mesh(mesh: Mapping[str, int] | None, devices: int) -> dict[str, int] | None:
    """``mesh`` on ``devices``: its first axis grown or shrunk so the product matches (None: one data axis)."""
    if not mesh:
        return None
    axes = dict(mesh)
    rest = 1
    for size in list(axes.values())[1:]:
        rest *= size
    first = next(iter(axes))
    if devices % rest:
        return {first: devices}
    axes[first] = devices // rest
    return axes


def largest_buffers(attribution: Attribution, top: int = TOP_BUFFERS) -> list[dict[str, Any]]:
    """The largest shares of the peak: bytes, bucket, instruction, op, shape and source line."""
    merged: dict[tuple, dict[str, Any]] = {}
    for share in attribution.shares:
        if share.buffer_id is None:
            continue
        key = (share.allocation, share.buffer_id)
        row = merged.setdefault(key, {"bytes": 0, "bucket": share.bucket, "instruction": share.instruction,
                                      "op_name": share.op_name, "shape": share.shape, "source": share.source})
        row["bytes"] += share.bytes
    rows = sorted(merged.values(), key=lambda r: -r["bytes"])[:top]
    for row in rows:
        row["size"] = format_bytes(row["bytes"])
    return rows
