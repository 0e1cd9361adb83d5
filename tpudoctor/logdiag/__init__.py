"""Log diagnosis: recognise TPU failure signatures in logs and rank the root cause first.

>>> from tpudoctor.logdiag import diagnose_text
>>> [f.id for f in diagnose_text(open("train.log").read(), "train.log")]
['hbm-oom-compile', 'hugepages-disabled']

Every recognised failure is a ``tpudoctor.findings.Finding`` of kind LOG: its id is the signature
id, its message the cause and where it was seen, and its evidence holds the values pulled from the
log beside ``DIAGNOSIS_FACTS`` (location, count, first timestamp, excerpt, ...). The catalog of
signatures is data (``catalog.toml``); ``Diagnoser`` streams events from any number of sources
(files, stdin, Cloud Logging entries) in bounded memory.
"""

from tpudoctor.logdiag.catalog import (
    DIAGNOSIS_FACTS,
    Catalog,
    CatalogError,
    Signature,
    load_catalog,
    parse_bytes,
)
from tpudoctor.logdiag.diagnose import Diagnoser, diagnose_file, diagnose_lines, diagnose_text
from tpudoctor.logdiag.events import LogEvent, group_events
from tpudoctor.logdiag.log_finding import cause_of, explain_with_node, pulled_evidence, where_found

__all__ = [
    "DIAGNOSIS_FACTS",
    "Catalog",
    "CatalogError",
    "Diagnoser",
    "LogEvent",
    "Signature",
    "cause_of",
    "diagnose_file",
    "diagnose_lines",
    "diagnose_text",
    "explain_with_node",
    "group_events",
    "load_catalog",
    "parse_bytes",
    "pulled_evidence",
    "where_found",
]
