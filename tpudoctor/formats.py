"""Output formats: one flag, one environment variable (``TPUDOCTOR_FORMAT``), one ``-o`` file.

The format is a setting (``tpudoctor.settings``): flag, then the environment, then the config file, then
text; ``Settings.format_for`` narrows it to the formats a command has.
"""

from __future__ import annotations

CHECK_FORMATS = ("text", "json", "markdown", "html", "junit")
FORMAT_ENV = "TPUDOCTOR_FORMAT"
