"""Where a per-host map runs: one executor for this process, local worker processes and a Dask cluster.

    executor = executor_for(host_files, cluster=None, max_workers=None)
    for host_file, outcome in executor.map(ANALYZE_HOST, host_files, options):
        ...   # outcome: what the task returned, or a message saying why this host has none

A ``HostTask`` names a plain module-level function of one host file (``pipeline.analyze_host``,
``capture.load_host``), so any executor can send it to another process by reference. Whatever
fails on one host (the task raised, the process running it died, the cluster lost it) comes back
as that host's message and the other hosts go on.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from tpudoctor.captures.capture_files import HostFile
from tpudoctor.errors import InputError


@dataclasses.dataclass(frozen=True)
class HostTask:
    """A function of one host file (``run(host_file, *args)``; ``InputError`` when that host cannot be
    read), with the words that name it in keys and messages."""

    run: Callable[..., Any]
    key: str
    """Task key prefix on a Dask scheduler: ``analyze-host``."""
    noun: str
    """"the <noun> process failed": ``analysis``."""
    verb: str
    """"could not be <verb>": ``analysed``."""
    preload: tuple[str, ...] = ()
    """Modules a fresh worker process imports before its first host."""


# Variables a task reads that a worker process started earlier (a forkserver child) would miss
PASSED_ENVIRONMENT = ("STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS")


def run_host_task(host_file: HostFile, task: HostTask, args: tuple = (),
                  environment: dict[str, str] | None = None) -> Any:
    """``task.run(host_file, *args)``, or the message saying why this host has no result."""
    if environment:  # a forkserver child keeps the environment of its server's start, not ours
        os.environ.update(environment)
    try:
        return task.run(host_file, *args)
    except InputError as exc:
        return exc.message + (f" ({exc.hint})" if exc.hint else "")
    except Exception as exc:  # noqa: BLE001 - one broken host must not take the others down
        return f"could not be {task.verb}: {type(exc).__name__}: {exc}"


class Executor(Protocol):
    def map(self, task: HostTask, host_files: Sequence[HostFile], *args: Any) -> Iterator[tuple[HostFile, Any]]:
        """(host file, the task's result or why there is none) per host, as they finish."""
        ...


class InProcess:
    """Each host in this process, one after another."""

    def map(self, task: HostTask, host_files: Sequence[HostFile], *args: Any) -> Iterator[tuple[HostFile, Any]]:
        for host_file in host_files:
            yield host_file, run_host_task(host_file, task, args)


@dataclasses.dataclass
class LocalProcesses:
    """Hosts spread over ``workers`` local processes: only each host's small result comes back."""

    workers: int

    def map(self, task: HostTask, host_files: Sequence[HostFile], *args: Any) -> Iterator[tuple[HostFile, Any]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # forkserver: a clean child even when this process has threads (cloud clients, rich)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(task.preload))
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            environment = {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}
            futures = [pool.submit(run_host_task, host_file, task, args, environment) for host_file in host_files]
            for host_file, future in zip(host_files, futures, strict=False):
                try:
                    yield host_file, future.result()
                except Exception as exc:  # noqa: BLE001 - a worker killed (e.g. out of memory)
                    yield host_file, f"the {task.noun} process failed: {type(exc).__name__}: {exc}"


@dataclasses.dataclass
class DaskCluster:
    """Hosts mapped on the workers of the Dask scheduler at ``address``, which read the host files
    themselves (local paths they can see, or ``gs://`` URIs); only host file locations go to them."""

    address: str
    connect_timeout_s: float | None = None
    map_timeout_s: float | None = None

    def map(self, task: HostTask, host_files: Sequence[HostFile], *args: Any) -> Iterator[tuple[HostFile, Any]]:
        import uuid

        from tpudoctor.profile import cluster

        distributed = cluster.import_distributed()
        map_timeout_s = self.map_timeout_s or cluster.MAP_TIMEOUT_S
        client = cluster.connect(self.address, timeout_s=self.connect_timeout_s or cluster.CONNECT_TIMEOUT_S)
        try:
            # keys unique to this run: a capture rewritten in place, or another client's run of the same
            # host names, must never be answered from a result the scheduler still holds
            run_id = uuid.uuid4().hex[:12]
            futures = client.map(run_host_task, host_files, task=task, args=args, pure=False,
                                 key=[f"tpudoctor-{task.key}-{f.hostname}-{run_id}" for f in host_files])
            by_key = {future.key: host_file for future, host_file in zip(futures, host_files, strict=True)}
            done = set()
            try:
                for future in distributed.as_completed(futures, loop=client.loop, timeout=map_timeout_s):
                    done.add(future.key)
                    yield by_key[future.key], _cluster_outcome(future)
            except TimeoutError:
                for future in futures:
                    if future.key not in done:
                        future.cancel()
                        yield by_key[future.key], f"not {task.verb} on the cluster within {map_timeout_s:g}s"
        finally:
            cluster.close(client)


def _cluster_outcome(future) -> Any:
    """The host's result, or why it has none (the task raised or the worker could not run it)."""
    from tpudoctor.profile.cluster import CONNECT_TIMEOUT_S

    try:
        return future.result(timeout=CONNECT_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - one host lost on the cluster must not lose the others
        return f"failed on the Dask cluster: {type(exc).__name__}: {exc}"


IN_PROCESS_MAX_BYTES = 32 << 20
"""Local host files smaller than this all together are analysed in this process, one after another:
below it, starting the worker processes (a fresh interpreter that imports numpy and pandas, about
1 s) costs more than their parallelism saves (``benchmarks/bench_profile_hosts_rss.py --scale 1``:
four 0.9 MB hosts in 2.7 s here, 5.0 s in worker processes, on 2 busy cores)."""


def executor_for(host_files: Sequence[HostFile], *, cluster: str | None = None, max_workers: int | None = None,
                 cluster_timeout_s: float | None = None) -> Executor:
    """The Dask cluster at ``cluster`` when one is named; else local processes, at most
    ``max_workers`` (default: the CPUs) and never more than the hosts; this process for one host,
    or for local files of under ``IN_PROCESS_MAX_BYTES`` in all."""
    if cluster:
        return DaskCluster(cluster, connect_timeout_s=cluster_timeout_s)
    workers = max(1, min(len(host_files), max_workers or os.cpu_count() or 1))
    if workers == 1 or _local_bytes(host_files) < IN_PROCESS_MAX_BYTES:
        return InProcess()
    return LocalProcesses(workers)


def _local_bytes(host_files: Sequence[HostFile]) -> float:
    """The host files' size in all; infinite when one is remote or cannot be read (its task says why)."""
    total = 0
    for host_file in host_files:
        if host_file.location.startswith("gs://"):
            return float("inf")
        try:
            total += os.path.getsize(host_file.location)
        except OSError:
            return float("inf")
    return total
