"""Reference models for step 5 and ``tpudoctor bench``."""
