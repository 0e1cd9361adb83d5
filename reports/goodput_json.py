"""The goodput document as JSON (schema ``goodput_report``)."""

from __future__ import annotations

import json
from typing import Any


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"
