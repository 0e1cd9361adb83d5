"""Where the reference captures live: ../shared/data beside the checkout, or TPUDOCTOR_SHARED_DATA."""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DATA = Path(os.environ.get("TPUDOCTOR_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
