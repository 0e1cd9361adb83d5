"""``with tpudoctor.profile.trace(logdir): ...`` - profile a block of this process (TensorFlow or JAX).

The framework is the one the process imported, or named with ``framework=``. When both are
loaded, TensorFlow wins (Keras 3 imports JAX behind TensorFlow's back whenever JAX is installed),
unless Keras runs on the JAX backend: JAX programs that use TensorFlow only for ``tf.data`` pass
``framework="jax"``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from tpudoctor.errors import UsageError

FRAMEWORKS = ("jax", "tensorflow")


@contextlib.contextmanager
def trace(logdir: str, *, framework: str | None = None, host_tracer_level: int = 2,
          python_tracer_level: int = 0) -> Iterator[str]:
    """Profile the ``with`` block into ``<logdir>/plugins/profile/<run>/``; yields the framework used."""
    chosen = framework or _imported_framework()
    if chosen == "jax":
        import jax

        options = None
        if hasattr(jax.profiler, "ProfileOptions"):
            options = jax.profiler.ProfileOptions()
            options.host_tracer_level = host_tracer_level
            options.python_tracer_level = python_tracer_level
        started = False
        try:
            if options is not None:
                jax.profiler.start_trace(logdir, profiler_options=options)
            else:
                jax.profiler.start_trace(logdir)
            started = True
            yield "jax"
        finally:
            if started:
                jax.profiler.stop_trace()
        return
    if chosen == "tensorflow":
        import tensorflow as tf

        options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=host_tracer_level,
                                                           python_tracer_level=python_tracer_level)
        tf.profiler.experimental.start(logdir, options=options)
        try:
            yield "tensorflow"
        finally:
            tf.profiler.experimental.stop()
        return
    raise UsageError(f"framework must be one of {', '.join(FRAMEWORKS)}, not {chosen!r}")


def _imported_framework() -> str:
    if "tensorflow" in sys.modules:
        keras = sys.modules.get("keras")
        backend = getattr(getattr(keras, "backend", None), "backend", None)
        try:
            on_jax = callable(backend) and backend() == "jax"
        except Exception:  # noqa: BLE001 - an odd Keras install must not break profiling
            on_jax = False
        return "jax" if on_jax else "tensorflow"
    if "jax" in sys.modules:
        return "jax"
    raise UsageError("trace() needs TensorFlow or JAX: import one of them first, or pass framework='jax'/'tensorflow'")
