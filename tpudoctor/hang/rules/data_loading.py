"""Loading data: the input pipeline (a data library, or the job's own loader code)."""

from __future__ import annotations

from tpudoctor.hang.rule import (
    SITE,
    STDLIB,
    Category,
    HangRule,
    Match,
    ThreadView,
    in_files,
    is_library,
    stack_example,
    words_of,
)

LIBRARIES = ("tensorflow/python/data/", "tensorflow_datasets/", "/grain/", "torch/utils/data/", "/datasets/",
             "/seqio/", "/array_record/", "/webdataset/", "/tfds/")
WORDS = {"data", "dataset", "datasets", "input", "inputs", "pipeline", "loader", "dataloader", "batch",
         "batches", "shard", "shards", "prefetch", "iterator", "feeder", "tfrecord", "tfrecords", "example",
         "examples", "sampler"}


class DataLoading(HangRule):
    """The thread is in the input pipeline: a data library's frames (``tf.data`` iterators, grain,
    ``torch.utils.data``, Hugging Face ``datasets``, seqio, ArrayRecord) or the job's own loader, named
    so (a function or file about data, input, batches, shards or prefetching: ``read_shard`` in
    ``input_pipeline.py``). A loader stuck this long waits on storage or the network, or on a producer
    thread that died."""

    id = "data-loading"
    category = Category.DATA
    rank = 30
    docs = "https://www.tensorflow.org/guide/data_performance"
    examples = (
        stack_example("the job's shard reader blocked in open()",
                    ("read_shard (input_pipeline.py:50) `with open(path, \"rb\") as handle:`",
                     "ShardReader.next_batch (input_pipeline.py:43)", "main (train.py:42)"), matches=True),
        stack_example("tf.data iterator",
                    (f"OwnedIterator._next_internal ({SITE}tensorflow/python/data/ops/iterator_ops.py:777)",
                     f"OwnedIterator.__next__ ({SITE}tensorflow/python/data/ops/iterator_ops.py:810)",
                     "train_loop (train.py:120)"), matches=True),
        stack_example("a prefetch queue fed by another thread",
                    (f"Condition.wait ({STDLIB}threading.py:327)", f"Queue.get ({STDLIB}queue.py:171)",
                     "Prefetcher.__next__ (input_pipeline.py:88)", "main (train.py:40)"), matches=True),
        stack_example("the training step is not data loading",
                    (f"ArrayImpl._value ({SITE}jax/_src/array.py:623)", "train_step (train.py:55)"), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        return self.first_frame(
            thread, lambda f: in_files(f, LIBRARIES) or (not is_library(f) and _loads_data(f)), python_only=True)


# A function that runs, processes or forwards a batch computes on data it already has (a server's
# ``run_batch``, ``process_batch_result``, ``forward_batch_generation``; sglang watchdog dumps): not loading.
COMPUTE_WORDS = {"run", "process", "forward", "generation", "generate", "result", "results", "eval", "train",
                 "step", "apply", "verify"}


def _loads_data(frame) -> bool:
    words = words_of(frame)
    return bool(words & WORDS) and not (set(frame.function.lower().replace(".", "_").split("_")) & COMPUTE_WORDS)
