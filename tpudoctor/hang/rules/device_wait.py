"""Waiting for the device: the host blocks until a result computed on the TPU (or CPU/GPU) is ready."""

from __future__ import annotations

import re

from tpudoctor.hang.rule import SITE, Category, HangRule, Match, ThreadView, in_files, stack_example

PYTHON = (
    ("jax/_src/array.py", None),
    ("jax/_src/api.py", {"block_until_ready", "device_get"}),
    ("jax/_src/dispatch.py", None),
    ("torch_xla/core/xla_model.py", {"mark_step", "wait_device_ops", "_fetch_gradients"}),
    ("torch_xla/_internal/", None),
    # torch.cuda.synchronize / Stream.synchronize / Event.synchronize block the host until the device's
    # queued work is done (PyTorch CUDA semantics docs); pytorch/pytorch#126624 shows a job deadlocked there.
    ("torch/cuda/__init__.py", {"synchronize"}),
    ("torch/cuda/streams.py", {"synchronize"}),
    ("tensorflow/python/framework/ops.py", {"numpy", "_numpy", "_numpy_internal"}),
    ("tensorflow/python/eager/execute.py", {"quick_execute"}),
)
NATIVE = re.compile(r"BlockHostUntilReady|BlockUntilReady|PjRtFuture|::Await\b|AwaitBuffer|WaitForEvent|"
                    r"TpuEvent|CopyToLiteral|ToLiteralSync|LazyToLiteral|PjRtStreamExecutor.*Wait")


def _python_device(frame) -> bool:
    for path, functions in PYTHON:
        if in_files(frame, [path]) and (functions is None or frame.function.rsplit(".", 1)[-1] in functions):
            return True
    return False


class DeviceWait(HangRule):
    """The thread waits for the device: it reads a result back (``float(loss)``, ``ArrayImpl._value``,
    ``block_until_ready``, ``jax.device_get``, torch_xla's ``mark_step``, TensorFlow's ``.numpy()``), or
    its native frames wait on a device event. In a multi-process job this is also how waiting in the
    step's collectives looks from Python: the program's all-reduce runs on the device."""

    id = "device-wait"
    category = Category.DEVICE
    rank = 20
    docs = "https://docs.jax.dev/en/latest/async_dispatch.html"
    examples = (
        stack_example("float(loss) in the training step",
                    (f"ArrayImpl._value ({SITE}jax/_src/array.py:623)",
                     f"annotate_function.<locals>.wrapper ({SITE}jax/_src/profiler.py:420)",
                     f"ArrayImpl.__float__ ({SITE}jax/_src/array.py:300)", "train_step (train.py:55)",
                     "main (train.py:43)"), matches=True),
        stack_example("block_until_ready", (f"block_until_ready ({SITE}jax/_src/api.py:3004)", "main (train.py:12)"),
                    matches=True),
        stack_example("reading a shard is not the device", ("read_shard (input_pipeline.py:50)", "main (train.py:42)"),
                    matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        return self.first_frame(thread, lambda f: (f.native and bool(NATIVE.search(f.function)))
                                or (not f.native and _python_device(f)))
