"""Output formats: one flag, one environment variable (``TPUDOCTOR_FORMAT``), one ``-o`` file.

The format is chosen by ``tpudoctor.commands.common.chosen_format``: flag, then the environment,
then the config file, then text.
"""

from __future__ import annotations

CHECK_FORMATS = ("text", "json", "markdown", "html", "junit")
FORMAT_ENV = "TPUDOCTOR_FORMAT"
