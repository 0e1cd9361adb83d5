"""Built-in goodput rules, one module each; found by ``tpudoctor.goodput.rule_registry``."""
