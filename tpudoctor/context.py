"""What a ``check`` run was asked to look at: the target and the user's options.

Fact providers read this; checks never do (they read facts only).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from tpudoctor.findings import Target


@dataclasses.dataclass
class CheckOptions:
    """Inputs from flags or the config file that providers act on."""

    data_paths: list[str] = dataclasses.field(default_factory=list)
    checkpoint_dirs: list[str] = dataclasses.field(default_factory=list)
    log_dirs: list[str] = dataclasses.field(default_factory=list)
    log_files: list[str] = dataclasses.field(default_factory=list)
    baseline_log: str | None = None
    """A log of the last good run of the same job: what is new in ``log_files`` against it is ranked."""
    since_s: float = 3600.0
    probe: bool = False
    write_probe: bool = False
    reference_model: str = "dense"
    reference_timeout_s: float = 300.0
    api_timeout_s: float = 10.0


@dataclasses.dataclass
class RunContext:
    target: Target = dataclasses.field(default_factory=Target)
    options: CheckOptions = dataclasses.field(default_factory=CheckOptions)
    run_timeout_s: float = 600.0
    started_monotonic: float = dataclasses.field(default_factory=time.monotonic)
    session: Any = None
    """The run's Google Cloud session (``tpudoctor.gcp.session.Session``), built by the command; None: one
    from this process's environment, made when a provider first needs it (library use, tests)."""
    _session_lock: Any = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)
    slice: Any = None
    """For a merged view only: every worker's outcome (``tpudoctor.pod.outcomes.SliceView``), which the
    slice checks judge; None on one machine."""

    @property
    def cloud(self) -> Any:
        """Google Cloud for the providers: ``ctx.cloud.tpu``, ``.storage``, ``.logging``, ``.monitoring``."""
        with self._session_lock:
            if self.session is None:
                from tpudoctor.gcp.session import Session

                self.session = Session.from_environment(timeout_s=self.options.api_timeout_s,
                                                        project=self.target.project)
            return self.session

    @property
    def deadline(self) -> float:
        return self.started_monotonic + self.run_timeout_s

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())
