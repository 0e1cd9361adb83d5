"""What tpudoctor knows about Google Cloud, as plain data and pure functions: gcloud command lines
(``gcloud``), IAM roles and permissions (``iam``), the kinds of API failure (``failures``) and the
parsing of gs:// paths (``uri``).

No I/O and no client library here: checks and rules read this; the adapters that call Google Cloud
live in ``tpudoctor.gcp``.
"""
