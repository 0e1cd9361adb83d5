"""Small checks and providers that exercise the engine itself (not registered as built-ins)."""

from __future__ import annotations

import threading
import time

from tpudoctor.check import Check, Example, remediation
from tpudoctor.facts import Unavailable
from tpudoctor.findings import Status, Step
from tpudoctor.provider import FactProvider

BARRIER = threading.Barrier(2, timeout=5)


class NodeFacts(FactProvider):
    name = "engine.node"
    provides = ("engine.node_state",)

    def gather(self, ctx, facts):
        return {"engine.node_state": "PREEMPTED"}


class BarrierA(FactProvider):
    """Finishes only if BarrierB runs at the same time: proves providers gather concurrently."""

    name = "engine.barrier_a"
    provides = ("engine.a",)

    def gather(self, ctx, facts):
        BARRIER.wait()
        return {"engine.a": 1}


class BarrierB(FactProvider):
    name = "engine.barrier_b"
    provides = ("engine.b",)

    def gather(self, ctx, facts):
        BARRIER.wait()
        return {"engine.b": 2}


class CrashingProvider(FactProvider):
    name = "engine.crashing"
    provides = ("engine.crash_fact",)

    def gather(self, ctx, facts):
        raise ConnectionResetError("peer reset the connection")


class HangingProvider(FactProvider):
    name = "engine.hanging"
    provides = ("engine.slow_fact",)
    timeout_s = 0.3

    def gather(self, ctx, facts):
        time.sleep(5)
        return {"engine.slow_fact": True}


class NotHereProvider(FactProvider):
    name = "engine.not_here"
    provides = ("engine.tpu_vm",)

    def gather(self, ctx, facts):
        return {"engine.tpu_vm": Unavailable("not running on a TPU VM")}


class _Base(Check):
    step = Step.NODE
    docs = "https://example.invalid/docs"


class NodeReady(_Base):
    """Node is READY."""

    id = "ENG-001"
    title = "node ready"
    facts = ("engine.node_state",)
    examples = (Example("ready", {"engine.node_state": "READY"}, Status.PASS),
                Example("preempted", {"engine.node_state": "PREEMPTED"}, Status.FAIL))

    def evaluate(self, facts):
        state = facts.require("engine.node_state")
        if state == "READY":
            return self.passed("READY")
        return self.fail(f"node is {state}", evidence={"state": state},
                         remediation=remediation("Recreate the node.", "gcloud compute tpus tpu-vm create n"))


class NeedsNode(_Base):
    """Depends on the node."""

    id = "ENG-002"
    title = "chips visible"
    requires = ("ENG-001",)
    facts = ("engine.node_state",)

    def evaluate(self, facts):
        return self.passed("chips ok")


class Crashes(_Base):
    """Raises."""

    id = "ENG-003"
    title = "crashes"
    facts = ("engine.node_state",)

    def evaluate(self, facts):
        return {}["missing"]


class Hangs(_Base):
    """Never returns in time."""

    id = "ENG-004"
    title = "hangs"
    facts = ("engine.node_state",)
    timeout_s = 0.2

    def evaluate(self, facts):
        time.sleep(3)
        return self.passed("late")


class ReadsCrashFact(_Base):
    """Reads a fact whose provider crashes."""

    id = "ENG-005"
    title = "reads crash fact"
    facts = ("engine.crash_fact",)

    def evaluate(self, facts):
        facts.require("engine.crash_fact")
        return self.passed("unreachable")


class ReadsSlowFact(_Base):
    """Reads a fact whose provider hangs."""

    id = "ENG-006"
    title = "reads slow fact"
    step = Step.GCS
    facts = ("engine.slow_fact",)

    def evaluate(self, facts):
        facts.require("engine.slow_fact")
        return self.passed("unreachable")


class ReadsTpuVm(_Base):
    """Reads a fact that does not apply here."""

    id = "ENG-007"
    title = "reads tpu vm"
    facts = ("engine.tpu_vm",)

    def evaluate(self, facts):
        facts.require("engine.tpu_vm")
        return self.passed("unreachable")


class UsesBoth(_Base):
    """Reads two concurrently gathered facts."""

    id = "ENG-008"
    title = "uses both"
    step = Step.LOGS
    facts = ("engine.a", "engine.b")

    def evaluate(self, facts):
        return self.passed(f"sum {facts.require('engine.a') + facts.require('engine.b')}")


class WarnsOnly(_Base):
    """Always warns."""

    id = "ENG-009"
    title = "warns"
    step = Step.RUNTIME
    facts = ("engine.node_state",)

    def evaluate(self, facts):
        return self.warn("heads up", remediation=remediation("Look.", "true"))
