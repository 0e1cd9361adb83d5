"""Output formats: one flag, one environment variable (``TPUDOCTOR_FORMAT``), one ``-o`` file."""

from __future__ import annotations

import os

CHECK_FORMATS = ("text", "json", "markdown", "html", "junit")
FORMAT_ENV = "TPUDOCTOR_FORMAT"


def default_format(choices: tuple[str, ...] = CHECK_FORMATS) -> str:
    wanted = os.environ.get(FORMAT_ENV, "text").strip().lower()
    return wanted if wanted in choices else "text"
