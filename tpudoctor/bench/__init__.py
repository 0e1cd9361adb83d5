"""``tpudoctor bench``: run a reference model, record throughput, gate it against a baseline.

``gate`` is the pure statistics, ``document`` the versioned bench/baseline JSON, ``launch``
the reference-model subprocess, ``product`` the product's ``run``. Nothing here imports a framework.
"""

from tpudoctor.bench.product import BenchOptions, run

__all__ = ["BenchOptions", "run"]
