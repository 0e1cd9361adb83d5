"""Log diagnosis: recognise TPU failure signatures in logs and rank the root cause first.

>>> from tpudoctor.logdiag import diagnose_text
>>> [d.signature_id for d in diagnose_text(open("train.log").read(), "train.log")]
['hbm-oom-compile', 'hugepages-disabled']

The catalog of signatures is data (``catalog.toml``); ``Diagnoser`` streams events from any
number of sources (files, stdin, Cloud Logging entries) in bounded memory.
"""

from tpudoctor.logdiag.catalog import Catalog, CatalogError, Signature, load_catalog, parse_bytes
from tpudoctor.logdiag.diagnose import (
    Diagnoser,
    Diagnosis,
    diagnose_file,
    diagnose_lines,
    diagnose_text,
    explain_with_node,
)
from tpudoctor.logdiag.events import LogEvent, group_events

__all__ = [
    "Catalog",
    "CatalogError",
    "Diagnoser",
    "Diagnosis",
    "LogEvent",
    "Signature",
    "diagnose_file",
    "diagnose_lines",
    "diagnose_text",
    "explain_with_node",
    "group_events",
    "load_catalog",
    "parse_bytes",
]
