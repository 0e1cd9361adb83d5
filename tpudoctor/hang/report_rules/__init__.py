"""Built-in hang report rules (HANG-001..), one module each; found by ``tpudoctor.hang.report_rule_registry``."""
