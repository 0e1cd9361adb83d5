"""Runs checks step by step: gather the facts a step needs, then evaluate its checks.

The runner owns everything a check must not: timeouts, crash capture (a crash is an ERROR
result, and the run goes on), dependency skipping (``blocked by <ID> (<status>)``, so one root
cause shows as one red line) and the whole-run deadline.
"""

from __future__ import annotations

import datetime as _dt
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from tpudoctor import __version__
from tpudoctor.check import Check
from tpudoctor.context import RunContext
from tpudoctor.facts import (
    FactGatherError,
    Facts,
    FactUnavailableError,
    GatherError,
    Unavailable,
)
from tpudoctor.families import Registry
from tpudoctor.findings import CheckResult, Report, Severity, Status, Step
from tpudoctor.provider import FactProvider
from tpudoctor.providers.report_environment import REPORT_ENVIRONMENT
from tpudoctor.providers.target import reported_target
from tpudoctor.providers.worker_env import WORKER_ENV_FACT

ProgressCallback = Callable[[str], None]

# A WARN still lets dependants run: the thing they need is there, with a caveat.
_UNBLOCKING = frozenset({Status.PASS, Status.WARN})


def _call_with_timeout(fn: Callable[[], Any], timeout_s: float) -> tuple[str, Any]:
    """Run ``fn`` in a daemon thread: ("ok", value) | ("error", exc, tb) | ("timeout", None).

    A thread that overruns is abandoned, not killed (Python cannot kill threads); providers
    put their own timeouts on network calls so this is the last line of defence.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - any crash becomes a result
            box["error"] = exc
            box["traceback"] = traceback.format_exc()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(max(0.0, timeout_s))
    if thread.is_alive():
        return ("timeout", None)
    if "error" in box:
        return ("error", (box["error"], box["traceback"]))
    return ("ok", box.get("value"))


class FactStore:
    """Gathers each provider at most once per run, on demand, honouring ``needs`` order."""

    def __init__(self, registry: Registry, ctx: RunContext, progress: ProgressCallback | None = None):
        self._registry = registry
        self._ctx = ctx
        self._progress = progress
        self._facts: dict[str, Any] = {}
        self._done: set[type[FactProvider]] = set()
        self.provider_durations_s: dict[str, float] = {}
        self._unbilled: set[str] = set()  # providers whose gathering time no check has been billed for yet

    @property
    def facts(self) -> Facts:
        return Facts(self._facts)

    def _providers_for(self, keys: Iterable[str]) -> list[type[FactProvider]]:
        ordered: list[type[FactProvider]] = []
        seen: set[type[FactProvider]] = set()

        def visit(key: str, trail: tuple[str, ...]) -> None:
            cls = self._registry.provider_for(key)
            if cls is None:
                if key not in self._facts:
                    self._facts[key] = GatherError("registry", f"no fact provider fills '{key}'")
                return
            if cls in seen or cls in self._done:
                return
            if key in trail:
                self._facts[key] = GatherError(cls.name, f"fact dependency cycle: {' -> '.join(trail)}")
                return
            for need in cls.needs:
                visit(need, trail + (key,))
            seen.add(cls)
            ordered.append(cls)

        for key in keys:
            visit(key, ())
        return ordered

    def ensure(self, keys: Iterable[str]) -> Facts:
        pending = self._providers_for(keys)
        while pending:
            wave = [p for p in pending if all(self._ready(need) for need in p.needs)]
            if not wave:  # unreachable with the cycle guard, but never loop forever
                wave = pending[:1]
            for cls in wave:
                pending.remove(cls)
            self._run_wave(wave)
        return self.facts

    def bill(self, keys: Iterable[str]) -> float:
        """Gathering time of the providers behind ``keys`` not yet counted for an earlier check.

        A check's duration then includes the facts it waited for (the reference run, an API call),
        each provider counted once, for the first check that read it.
        """
        total = 0.0
        for key in keys:
            cls = self._registry.provider_for(key)
            if cls is not None and cls.name in self._unbilled:
                self._unbilled.discard(cls.name)
                total += self.provider_durations_s.get(cls.name, 0.0)
        return total

    def _ready(self, key: str) -> bool:
        cls = self._registry.provider_for(key)
        return cls is None or cls in self._done

    def _run_wave(self, wave: list[type[FactProvider]]) -> None:
        facts_now = self.facts
        threads: list[tuple[type[FactProvider], threading.Thread, dict[str, Any], float]] = []
        for cls in wave:
            if self._progress:
                self._progress(f"gathering {cls.name or cls.__name__}")
            box: dict[str, Any] = {}
            provider = cls()

            def target(provider: FactProvider = provider, box: dict[str, Any] = box) -> None:
                try:
                    box["value"] = provider.gather(self._ctx, facts_now)
                except BaseException as exc:  # noqa: BLE001
                    box["error"] = f"{type(exc).__name__}: {exc}"

            thread = threading.Thread(target=target, daemon=True, name=f"facts-{cls.name}")
            started = time.monotonic()  # before start(): a busy machine may run the thread first
            thread.start()
            threads.append((cls, thread, box, started))
        for cls, thread, box, started in threads:
            # both limits are absolute: the provider's own from its start, the run's from now
            now = time.monotonic()
            deadline = started + cls.timeout_s
            if not cls.after_deadline:
                deadline = min(deadline, now + self._ctx.remaining_s())
            budget = deadline - started
            thread.join(max(0.0, deadline - now))
            self._done.add(cls)
            self.provider_durations_s[cls.name] = time.monotonic() - started
            self._unbilled.add(cls.name)
            if thread.is_alive():
                err = GatherError(cls.name, f"no answer within {budget:.1f}s", timed_out=True)
                self._fill(cls, lambda _key: err)  # noqa: B023 - called at once
            elif "error" in box:
                err = GatherError(cls.name, box["error"])
                self._fill(cls, lambda _key: err)  # noqa: B023 - called at once
            else:
                value = box.get("value") or {}
                undeclared = sorted(set(value) - set(cls.provides))
                if undeclared:  # a bug in the provider: its facts cannot be trusted, and no check may read them
                    err = GatherError(cls.name, f"provider returned fact(s) it does not declare in 'provides': "
                                                f"{', '.join(map(str, undeclared))}")
                    self._fill(cls, lambda _key: err)  # noqa: B023 - called at once
                    continue
                missing = GatherError(cls.name, "provider returned no value for this fact")
                self._fill(cls, lambda key: value.get(key, missing))  # noqa: B023 - called at once

    def _fill(self, cls: type[FactProvider], value_for: Callable[[str], Any]) -> None:
        for key in cls.provides:
            self._facts[key] = value_for(key)


class Runner:
    def __init__(
        self,
        registry: Registry,
        ctx: RunContext,
        *,
        progress: ProgressCallback | None = None,
    ):
        self.registry = registry
        self.ctx = ctx
        self.progress = progress
        self.store = FactStore(registry, ctx, progress)

    def run(self, check_classes: Iterable[type[Check]]) -> Report:
        started = time.monotonic()
        started_at = _dt.datetime.now(_dt.timezone.utc)  # the wall clock when the run began: merges compare it
        report = Report(
            results=self.results(check_classes),
            target=reported_target(self.ctx.target, self.store.facts),
            host=socket.gethostname(),
            tool_version=__version__,
            environment=self._environment(),
            started_at=started_at,
        )
        report.duration_s = time.monotonic() - started
        return report

    def results(self, check_classes: Iterable[type[Check]]) -> list[CheckResult]:
        """The checks' results, step by step, in the order given within a step (a merge makes its own
        report around them). A check that does not apply to the facts (``Check.applies``) gives none."""
        classes = sorted(check_classes, key=lambda c: int(c.step))
        by_step: dict[Step, list[type[Check]]] = {}
        for cls in classes:
            by_step.setdefault(cls.step, []).append(cls)
        selected = {cls.id for cls in classes}
        results: dict[str, CheckResult] = {}
        if self.ctx.remaining_s() > 0:
            self.store.ensure([WORKER_ENV_FACT])  # which worker this is: each report records it for a merge

        for step in sorted(by_step):
            step_checks = _dependency_order(by_step[step])
            if self.progress:
                self.progress(f"step {int(step)}: {step.label}")
            runnable = [c for c in step_checks if self._blocker(c, results, selected) is None]
            needed = sorted({key for c in runnable for key in c.facts})
            if needed and self.ctx.remaining_s() > 0:
                self.store.ensure(needed)
            for cls in step_checks:
                result = self._run_one(cls, results, selected)
                if result is not None:
                    results[cls.id] = result
        return [results[c.id] for c in classes if c.id in results]

    def _environment(self) -> dict[str, Any]:
        """Where the run happened (a provider's fact, gathered last from what the run has): {} when it broke."""
        value = self.store.ensure([REPORT_ENVIRONMENT]).get(REPORT_ENVIRONMENT)
        return value if isinstance(value, dict) else {}

    def _blocker(
        self, cls: type[Check], results: dict[str, CheckResult], selected: set[str]
    ) -> CheckResult | None:
        for req in cls.requires:
            if req not in selected:
                continue  # the user ran a subset: judge this check on its own
            done = results.get(req)
            if done is not None and done.status not in _UNBLOCKING:
                return done
        return None

    def _run_one(self, cls: type[Check], results: dict[str, CheckResult],
                 selected: set[str]) -> CheckResult | None:
        t0 = time.monotonic()
        check = cls()
        blocker = self._blocker(cls, results, selected)
        if blocker is not None:
            why = f"blocked by {blocker.id} ({blocker.status.value})"
            evidence = {"blocked_by": blocker.id}
            if blocker.status is Status.SKIP:
                # Name the first reason in the chain once, not "blocked by A: blocked by B: ...".
                root_reason = blocker.evidence.get("root_skip_reason") or blocker.skip_reason
                if root_reason:
                    why += f": {root_reason}"
                    evidence["root_skip_reason"] = root_reason
            return check.skip(why, evidence=evidence)
        if self.ctx.remaining_s() <= 0:
            return _error(check, f"the run's time limit ({self.ctx.run_timeout_s:g}s) was reached before this check ran",
                          {"run_timeout_s": self.ctx.run_timeout_s})
        if self.progress:
            self.progress(f"{cls.id} {cls.title}")
        facts = self.store.facts
        budget = min(cls.timeout_s, self.ctx.remaining_s())
        outcome, payload = _call_with_timeout(lambda: _evaluate_if_applies(check, facts), budget)
        if outcome == "timeout":
            result = _error(check, f"check did not finish within {budget:.1f}s", {"timeout_s": budget})
        elif outcome == "error":
            exc, tb = payload
            result = _error(
                check,
                f"check crashed: {type(exc).__name__}: {exc}",
                {"exception": f"{type(exc).__name__}: {exc}", "traceback": tb},
            )
        elif payload is None:
            return None
        else:
            result = payload
        result.duration_s = time.monotonic() - t0 + self.store.bill(cls.facts)
        return result


def evaluate_check(check: Check, facts: Facts) -> CheckResult:
    """One check on one set of facts: missing facts become SKIP, broken ones ERROR."""
    try:
        result = check.evaluate(facts)
    except FactUnavailableError as exc:
        return check.skip(exc.reason, evidence={"missing_fact": exc.key})
    except FactGatherError as exc:
        ge = exc.gather_error
        return _error(check, str(exc), {"fact": exc.key, "provider": ge.provider, "timed_out": ge.timed_out})
    if not isinstance(result, CheckResult) or result.id != check.id:
        return _error(check, f"check returned {type(result).__name__}, not its own CheckResult", {})
    return result


def _evaluate_if_applies(check: Check, facts: Facts) -> CheckResult | None:
    try:
        if not check.applies(facts):
            return None
    except (FactUnavailableError, FactGatherError):
        pass  # evaluating says why (SKIP, ERROR)
    return evaluate_check(check, facts)


def _error(check: Check, message: str, evidence: dict[str, Any]) -> CheckResult:
    result = check.error(message, evidence=evidence)
    result.severity = Severity.MEDIUM
    return result


def _dependency_order(classes: list[type[Check]]) -> list[type[Check]]:
    """Within a step, a check runs after the checks it requires (stable otherwise)."""
    ids = {c.id: c for c in classes}
    ordered: list[type[Check]] = []
    placed: set[str] = set()

    def place(cls: type[Check], trail: tuple[str, ...]) -> None:
        if cls.id in placed or cls.id in trail:
            return
        for req in cls.requires:
            if req in ids:
                place(ids[req], trail + (cls.id,))
        placed.add(cls.id)
        ordered.append(cls)

    for cls in sorted(classes, key=lambda c: c.id):
        place(cls, ())
    return ordered


__all__ = ["FactStore", "Runner", "Unavailable", "evaluate_check"]
