"""The built-in profile rules, one per module (registered through the ``tpudoctor.profile_rules``
entry point; see ``tpudoctor.profile.rule`` for the contract)."""
