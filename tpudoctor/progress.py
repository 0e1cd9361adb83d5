"""Progress on stderr for anything slower than a second: a rich spinner on a terminal, silence otherwise.

Reports go to stdout, progress to stderr, so piping ``--format json`` stays clean.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

SLOW_WARNING_S = 10.0


@contextlib.contextmanager
def progress(title: str, *, enabled: bool | None = None) -> Iterator[Callable[[str], None]]:
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        yield lambda _message: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    started = time.monotonic()
    with console.status(title) as status:
        def update(message: str) -> None:
            elapsed = time.monotonic() - started
            slow = "  (this is taking longer than usual)" if elapsed > SLOW_WARNING_S else ""
            status.update(f"{title}: {message} [{elapsed:.0f}s]{slow}")

        yield update
