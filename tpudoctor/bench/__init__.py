"""``tpudoctor bench``: run a reference model, record throughput, gate it against a baseline.

``gate`` is the pure statistics, ``document`` the versioned bench/baseline JSON, ``launch``
the reference-model subprocess. Nothing here imports a framework.
"""
