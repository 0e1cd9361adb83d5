"""Views and emitters: they format a prepared report document and do nothing else (no I/O, no analysis);
``tpudoctor.rendering.render`` picks them."""
