"""Compiling: tracing or compiling a program (XLA), which takes seconds to minutes."""

from __future__ import annotations

import re

from tpudoctor.hang.rule import SITE, Category, HangRule, Match, ThreadView, in_files, stack_example

PYTHON_FILES = ("jax/_src/compiler.py", "jax/_src/interpreters/pxla.py", "jax/_src/interpreters/partial_eval.py",
                "tensorflow/python/eager/polymorphic_function/", "torch_xla/_dynamo/")
PYTHON_FUNCTIONS = re.compile(r"compil|lower|trace_to_jaxpr|_trace", re.IGNORECASE)
NATIVE = re.compile(r"Compile|HloPassPipeline|HloModule.*Pass|llvm::|TpuCompiler|RunHloPasses|MlirToXla")


class Compiling(HangRule):
    """The thread compiles or traces a program: JAX's ``backend_compile``/``compile_or_get_cached``,
    ``MeshComputation.compile``, tracing (``trace_to_jaxpr``), TensorFlow function tracing, or native XLA
    compiler passes. When one worker compiles while the others wait, it is compiling a program the others
    already have: a shape or a static argument differs on that worker."""

    id = "compiling"
    category = Category.COMPILING
    rank = 15
    docs = "https://docs.jax.dev/en/latest/persistent_compilation_cache.html"
    examples = (
        stack_example("JAX backend compile",
                    (f"backend_compile_and_load ({SITE}jax/_src/compiler.py:353)",
                     f"compile_or_get_cached ({SITE}jax/_src/compiler.py:469)",
                     f"_cached_compilation ({SITE}jax/_src/interpreters/pxla.py:1516)",
                     f"_cpp_pjit.<locals>.cache_miss ({SITE}jax/_src/pjit.py:259)", "train_step (train.py:54)"),
                    matches=True),
        stack_example("a step that runs is not compiling",
                    (f"ArrayImpl._value ({SITE}jax/_src/array.py:623)", "train_step (train.py:55)"), matches=False),
    )

    def match(self, thread: ThreadView) -> Match | None:
        return self.first_frame(thread, lambda f: (f.native and bool(NATIVE.search(f.function))) or (
            not f.native and in_files(f, PYTHON_FILES) and bool(PYTHON_FUNCTIONS.search(f.function))))
