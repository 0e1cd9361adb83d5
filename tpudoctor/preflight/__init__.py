"""Preflight: compile a JAX program for a TPU topology on any x86 Linux host with the real TPU compiler (libtpu),
and say whether it fits, what fills the peak, and which fixes, applied and recompiled, make it fit.

* ``compiler``: the topology's devices, the mesh, one compile and what it says (``compile_for_topology``).
* ``program``: ``FILE.py:FACTORY`` and the factory's knobs.
* ``fixes``: the fixes applied from outside and through the knobs, each with its prediction.
* ``analysis``: the preflight itself (``preflight``) and its report (``PreflightReport``).

Importing this package imports no framework; JAX loads when a preflight runs.
"""

from __future__ import annotations


def preflight(*args, **kwargs):
    """``tpudoctor.preflight.analysis.preflight``."""
    from tpudoctor.preflight.analysis import preflight as run

    return run(*args, **kwargs)
