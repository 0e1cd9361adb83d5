"""Hypothesis profiles for the fuzz tests.

CI runs the quick ``ci`` profile; by hand, ``TPUDOCTOR_FUZZ_PROFILE=long pytest tests/fuzz`` runs
many more inputs. Either way a failure prints the smallest input that broke.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=120, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "long", max_examples=20_000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("TPUDOCTOR_FUZZ_PROFILE", "ci"))
