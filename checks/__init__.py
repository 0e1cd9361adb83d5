"""Built-in checks, one class per file, grouped by triage step:

``node`` (1), ``gcs`` (2), ``runtime`` (3), ``logs`` (4), ``reference`` (5); and ``slice``, the checks
that judge a merged view of every worker's report (``tpudoctor merge``, ``check --all-workers``).
"""
