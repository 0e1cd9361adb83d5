"""Goodput: where a job's paid TPU time went, from the logs it already writes.

>>> from tpudoctor.goodput import analyze_paths
>>> doc = analyze_paths(["train.log"])
>>> doc["goodput"]["ettr"], doc["goodput"]["badput"]["PROGRAM_STARTUP"]

Pipeline, one module each, over the shared log layer (``tpudoctor.logs``: sources, prefixes, the one clock
and the one step grammar): ``readers`` (the framework line readers), ``lines`` (a source's lines -> typed events), ``timeline`` (runs, step intervals, saves, restores; streamed, bounded), ``account``
(ETTR and ml-goodput-measurement's buckets), ``rules`` (findings), ``cloud`` (Cloud Logging and the
recorder's entries), ``analyze`` (the document), ``compare`` (two documents).
"""

from tpudoctor.goodput.analyze import SCHEMA_VERSION, analyze_events, analyze_paths

__all__ = ["SCHEMA_VERSION", "analyze_events", "analyze_paths"]
