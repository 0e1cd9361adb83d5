"""The built-in hang rules, one per module (registered through the ``tpudoctor.hang_rules`` entry point;
see ``tpudoctor.hang.rule`` for the contract)."""
