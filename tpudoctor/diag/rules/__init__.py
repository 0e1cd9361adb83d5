"""Built-in diag rules, one module each; found by ``tpudoctor.diag.rule_registry``."""
