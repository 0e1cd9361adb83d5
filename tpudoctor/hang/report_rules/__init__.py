"""Built-in hang report rules (HANG-001..), one module each; found by the family table (``tpudoctor.families``, ``hang-report-rules``)."""
