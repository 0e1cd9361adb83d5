"""Built-in goodput rules, one module each; found by the family table (``tpudoctor.families``, ``goodput-rules``)."""
