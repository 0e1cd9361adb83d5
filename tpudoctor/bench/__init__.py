"""``tpudoctor bench``: run a reference model, record throughput, gate it against a baseline.

``gate`` is the pure statistics, ``document`` the versioned bench/baseline JSON, ``launch`` the reference-model
subprocess, ``product`` the product's ``run`` (imported from there, so that this package stays free of numpy for
``--help``). Nothing here imports a framework.
"""

DEFAULT_CONFIRM_RUNS = 4
"""Fresh runs that may confirm a suspected drop. On a 2-core VM, 8 of 30 fresh processes of the dense model
settled ~20 % slower than the rest (not the hash seed, oneDNN or the thread count; a probe kernel in the same
process did not slow): with 2 confirmations, three slow processes in a row (~2 %) failed 1 rerun in 10; with
4, five in a row is ~0.1 %. A real regression is slow on every run, so it costs only the extra runs' time."""
