"""Pod slices: run a command on every worker (``FanOut``, through gcloud ssh) and merge per-worker reports into one."""

from __future__ import annotations

from typing import Any

__all__ = ["FanOut", "WorkerCommand"]


def __getattr__(name: str) -> Any:
    """``tpudoctor.pod.FanOut`` without importing the fan-out (threads, subprocesses) with every pod module."""
    if name in __all__:
        from tpudoctor.pod import fanout

        return getattr(fanout, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
