"""Built-in memory fix rules, one module each; found by the family table (``tpudoctor.families``, ``memory-rules``)."""
