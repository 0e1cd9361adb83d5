"""Connecting to a Dask distributed cluster for the per-host map (``executor.DaskCluster`` runs it).

Only host file locations (local paths the workers can see, or ``gs://`` URIs) go to the workers;
each worker reads its capture itself, with its own credentials, through the same storage code as a
local run, and sends back only the small ``HostResult``. The COMBINE runs in the caller. A client
is refused unless every worker runs this tpudoctor.

Dask is optional (``pip install 'tpudoctor[dask]'``): this module imports ``distributed`` only when
a cluster is asked for, so a local run and ``--help`` never load it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from tpudoctor.errors import UsageError

CONNECT_TIMEOUT_S = 10.0
# the whole map: a host that has not come back by then is reported as failed, the others are kept
MAP_TIMEOUT_S = 1800.0
INSTALL_HINT = "pip install 'tpudoctor[dask]'   (or: pip install 'dask[distributed]')"


def import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise UsageError(
            f"--cluster needs Dask distributed, which is not installed here ({exc})",
            hint=INSTALL_HINT,
        ) from None
    return distributed


@contextlib.contextmanager
def _quiet_dask_logs() -> Iterator[None]:
    """Dask logs its connection retries and shutdown at WARNING/ERROR; our errors say it once."""
    loggers = [logging.getLogger(name) for name in ("distributed", "distributed.client", "distributed.comm",
                                                     "distributed.core", "distributed.batched")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def connect(address: str, *, timeout_s: float = CONNECT_TIMEOUT_S):
    """A ``distributed.Client`` on the scheduler at ``address`` whose workers run this tpudoctor.

    ``UsageError`` (exit 2) when Dask is missing, the scheduler cannot be reached in ``timeout_s``,
    it has no workers, or a worker lacks tpudoctor or runs another version of it."""
    distributed = import_distributed()
    address = _checked_address(address)
    hint = (f"start one with `dask scheduler` (port 8786) and `dask worker {address}` on machines that can read "
            "the captures, or check the address and the firewall")
    try:
        with _quiet_dask_logs():
            client = distributed.Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} within {timeout_s:g}s ({exc})",
                         hint=hint) from None
    try:
        _wait_for_workers(client, address, timeout_s)
        check_worker_versions(probe_workers(client))
    except BaseException:
        close(client)
        raise
    return client


def _checked_address(address: str) -> str:
    address = str(address).strip()
    if not address:
        raise UsageError("--cluster wants a scheduler address such as tcp://10.0.0.2:8786")
    if "://" not in address:
        address = "tcp://" + address
    from distributed.comm.registry import backends

    scheme, _, location = address.partition("://")
    if scheme not in backends or scheme == "inproc" or not location.strip("/"):
        # checked before Dask sees it: Dask would fail late, from a half-made client
        raise UsageError(f"not a Dask scheduler address: {address!r}",
                         hint="write it like tcp://10.0.0.2:8786 (schemes: "
                              + ", ".join(sorted(set(backends) - {"inproc"})) + ")")
    return address


def _wait_for_workers(client, address: str, timeout_s: float) -> None:
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except (TimeoutError, OSError):
        raise UsageError(f"the Dask scheduler at {address} has no workers (waited {timeout_s:g}s)",
                         hint=f"start workers with `dask worker {address}` where tpudoctor is installed") from None


# What each worker imports when it runs the map, and the version it then reports. A fixed expression
# run by the builtin ``eval``: the one callable every worker can unpickle, with or without tpudoctor
# (package metadata alone would miss a worker whose tpudoctor is installed but cannot be imported).
_PROBE = "__import__('tpudoctor.profile.pipeline').__version__"


def probe_workers(client) -> dict[str, str | BaseException]:
    """Per worker address: the tpudoctor version its map would run, or why it cannot import it."""
    return client.run(eval, _PROBE, {}, on_error="return")


def check_worker_versions(found: dict[str, str | BaseException], mine: str | None = None) -> None:
    """``UsageError`` when a worker cannot import tpudoctor or runs another version than this client."""
    if mine is None:
        from tpudoctor import __version__ as mine
    broken, other = [], []
    for worker, theirs in sorted(found.items()):
        if isinstance(theirs, BaseException):
            broken.append(f"{worker} ({type(theirs).__name__}: {theirs})")
        elif theirs != mine:
            other.append(f"{worker} has {theirs}")
    hint = f"install tpudoctor=={mine} (pip install 'tpudoctor[dask]=={mine}') in the workers' environment and restart them"
    if broken:
        raise UsageError(f"Dask worker(s) cannot import tpudoctor: {'; '.join(broken)}", hint=hint)
    if other:
        raise UsageError(f"Dask workers run another tpudoctor than this one ({mine}): {'; '.join(other)}", hint=hint)


def close(client) -> None:
    with _quiet_dask_logs(), contextlib.suppress(Exception):
        client.close(timeout=CONNECT_TIMEOUT_S)
