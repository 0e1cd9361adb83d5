"""Bench result as JSON (schema ``bench_result``; the same document a baseline file holds)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def render(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
