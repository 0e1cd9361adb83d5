"""Synthetic training data: generated with numpy from a fixed seed, never downloaded.

Optionally written as TFRecord files (local or ``gs://``, only when asked) and read back, so
the run exercises the same input path as a real job reading from Cloud Storage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TFRECORD_SHARDS = 2


def write_tfrecords(x: np.ndarray, y: np.ndarray, data_dir: str, prefix: str) -> list[str]:
    """Write (x, y) as ``TFRECORD_SHARDS`` TFRecord files under ``data_dir``; return their paths."""
    import tensorflow as tf

    tf.io.gfile.makedirs(data_dir)
    paths = []
    for shard in range(TFRECORD_SHARDS):
        path = f"{data_dir.rstrip('/')}/{prefix}-{shard:05d}-of-{TFRECORD_SHARDS:05d}.tfrecord"
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(shard, len(x), TFRECORD_SHARDS):
                writer.write(_example(x[i], y[i]).SerializeToString())
        paths.append(path)
    return paths


def _feature(values: np.ndarray) -> Any:
    import tensorflow as tf

    flat = np.asarray(values).reshape(-1)
    if np.issubdtype(flat.dtype, np.integer):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=flat.tolist()))
    return tf.train.Feature(float_list=tf.train.FloatList(value=flat.astype(np.float32).tolist()))


def _example(x: np.ndarray, y: np.ndarray) -> Any:
    import tensorflow as tf

    return tf.train.Example(features=tf.train.Features(feature={"x": _feature(x), "y": _feature(y)}))


def tfrecord_dataset(paths: list[str], x_like: np.ndarray, y_like: np.ndarray) -> Any:
    """A dataset of (x, y) parsed from the files ``write_tfrecords`` wrote, shapes and dtypes restored."""
    import tensorflow as tf

    def spec(array: np.ndarray) -> Any:
        dtype = tf.int64 if np.issubdtype(array.dtype, np.integer) else tf.float32
        return tf.io.FixedLenFeature(array.shape[1:], dtype)

    features = {"x": spec(x_like), "y": spec(y_like)}

    def parse(record: Any) -> tuple[Any, Any]:
        parsed = tf.io.parse_single_example(record, features)
        return (tf.cast(parsed["x"], x_like.dtype.name), tf.cast(parsed["y"], y_like.dtype.name))

    files = tf.data.Dataset.from_tensor_slices(paths)
    return files.interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE).map(
        parse, num_parallel_calls=tf.data.AUTOTUNE
    )
