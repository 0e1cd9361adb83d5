"""Built-in diag rules, one module each; found by the family table (``tpudoctor.families``, ``diag-rules``)."""
