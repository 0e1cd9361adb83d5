"""Built-in memory fix rules, one module each; found by ``tpudoctor.memory.rule_registry``."""
