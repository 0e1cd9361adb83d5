"""Waiting in a collective: an all-reduce, all-gather or barrier that every process must join."""

from __future__ import annotations

import re

from tpudoctor.hang.rule import SITE, Category, HangRule, Match, ThreadView, in_files, stack_example

NATIVE = re.compile(r"gloo::|nccl|AllReduce|AllGather|ReduceScatter|AllToAll|CollectivePermute|CollectiveThunk|"
                    r"[Mm]egascale|Rendezvous|[Bb]arrier", re.IGNORECASE)
PYTHON = (
    ("jax/experimental/multihost_utils.py", {"sync_global_devices", "process_allgather", "broadcast_one_to_all",
                                             "assert_equal", "_psum"}),
    ("jax/_src/distributed.py", None),
    ("torch/distributed/", None),
    ("torch_xla/core/xla_model.py", {"rendezvous", "mesh_reduce", "all_reduce", "all_gather", "reduce_scatter"}),
    ("tensorflow/python/ops/collective_ops.py", None),
)
WAIT_FUNCTIONS = re.compile(r"wait_at_barrier|blocking_key_value_get|barrier", re.IGNORECASE)
# Wrappers named after the collective they issue (DeepSpeed's ``all_gather_coalesced``, ``deepspeed/comm``'s
# ``all_gather_into_tensor``; accelerate#3104, DeepSpeed#6524 dumps).
COLLECTIVE_FUNCTIONS = re.compile(r"all_?gather|all_?reduce|reduce_scatter|all_to_all|broadcast_coalesced",
                                  re.IGNORECASE)
LIBRARY_COLLECTIVES = ("deepspeed/comm/",)


def _python_collective(frame) -> bool:
    for path, functions in PYTHON:
        if in_files(frame, [path]) and (functions is None or frame.function.rsplit(".", 1)[-1] in functions):
            return True
    return False


class CollectiveWait(HangRule):
    """The thread waits in a collective operation or a barrier: its native frames are gloo, NCCL or
    Megascale collectives (``gloo::allreduce``, ``AllReduceThunk``), or its Python frames are a
    multi-host utility (``sync_global_devices``, ``process_allgather``), a distributed barrier
    (``wait_at_barrier``), ``torch.distributed`` or torch_xla's ``rendezvous``. It waits for the
    processes that have not joined."""

    id = "collective-wait"
    category = Category.COLLECTIVE
    rank = 10
    docs = "https://docs.jax.dev/en/latest/multi_process.html"
    examples = (
        stack_example("gloo all-reduce (native)", ("train_step (train.py:55)",),
                    native=("pthread_cond_timedwait (libc.so.6)",
                            "gloo::transport::tcp::UnboundBuffer::waitRecv (jaxlib/libjax_common.so)",
                            "gloo::allreduce (jaxlib/libjax_common.so)",
                            "xla::cpu::GlooCommunicator::AllReduce (jaxlib/libjax_common.so)"), matches=True),
        stack_example("multi-host barrier", (f"sync_global_devices ({SITE}jax/experimental/multihost_utils.py:95)",
                                           "save (train.py:80)"), matches=True),
        stack_example("waiting for a result is not a collective",
                    (f"ArrayImpl._value ({SITE}jax/_src/array.py:623)", "train_step (train.py:55)"), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        own = self.first_frame(thread, _collective_frame)
        if own is not None or thread.active:
            return own
        # The training thread waits inside a native call (autograd's ``backward``) while a thread it started
        # issues the collective (ZeRO-3/FSDP gradient hooks): the process waits in that collective.
        for other in thread.others:
            frame = next((f for f in other.frames if _collective_frame(f)), None)
            if frame is not None and thread.frames and not _started_by_threading(thread):
                return Match(frame=frame, depth=0, detail=f"its thread {other.name or other.tid} is in {frame.function}")
        return None


def _collective_frame(f) -> bool:
    if f.native:
        return bool(NATIVE.search(f.function))
    return (_python_collective(f) or bool(WAIT_FUNCTIONS.search(f.function))
            or (bool(COLLECTIVE_FUNCTIONS.search(f.function))
                and (in_files(f, LIBRARY_COLLECTIVES) or "deepspeed/" in f.file or "torch/distributed/" in f.file)))


def _started_by_threading(thread: ThreadView) -> bool:
    return bool(thread.frames) and thread.frames[-1].function in ("_bootstrap", "Thread._bootstrap")
