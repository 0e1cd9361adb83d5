"""Data files shipped with tpudoctor (read with importlib.resources)."""
