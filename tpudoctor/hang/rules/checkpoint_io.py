"""Checkpoint I/O: saving or restoring a checkpoint."""

from __future__ import annotations

from tpudoctor.hang.rule import (
    SITE,
    Category,
    HangRule,
    Match,
    ThreadView,
    in_files,
    is_library,
    stack_example,
    words_of,
)

LIBRARIES = ("/orbax/", "flax/training/checkpoints.py", "/tensorstore/", "tensorflow/python/checkpoint/",
             "tensorflow/python/training/saver.py", "torch/serialization.py", "torch_xla/utils/serialization.py",
             "/safetensors/", "torch/distributed/checkpoint/")
WORDS = {"checkpoint", "checkpoints", "checkpointing", "checkpointer", "ckpt", "save", "saver", "saving",
         "restore", "restoring", "snapshot"}


class CheckpointIO(HangRule):
    """The thread saves or restores a checkpoint: Orbax, Flax checkpoints, TensorStore, TensorFlow's
    ``Checkpoint``/``Saver``, ``torch.save``, safetensors, or the job's own code named so
    (``Checkpointer.save``). A save stuck this long waits on storage (a GCS write, a full or hung disk)."""

    id = "checkpoint-io"
    category = Category.CHECKPOINT
    rank = 30
    docs = "https://orbax.readthedocs.io/en/latest/guides/checkpoint/async_checkpointing.html"
    examples = (
        stack_example("the job's atomic write blocked in open()",
                    ("write_atomically (checkpointing.py:25) `with open(tmp, \"wb\") as handle:`",
                     "Checkpointer.save (checkpointing.py:21)", "main (train.py:46)"), matches=True),
        stack_example("Orbax save",
                    (f"_write_metadata_file ({SITE}orbax/checkpoint/_src/metadata/checkpoint.py:210)",
                     f"CheckpointManager.save ({SITE}orbax/checkpoint/checkpoint_manager.py:1311)",
                     "train_loop (train.py:140)"), matches=True),
        stack_example("the data loader is not a checkpoint",
                    ("read_shard (input_pipeline.py:50)", "main (train.py:42)"), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        return self.first_frame(
            thread, lambda f: in_files(f, LIBRARIES) or (not is_library(f) and bool(words_of(f) & WORDS)),
            python_only=True)
