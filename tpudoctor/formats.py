"""Output formats: one flag, one environment variable (``TPUDOCTOR_FORMAT``), one ``-o`` file.

The format is a setting (``tpudoctor.settings``): flag, then the environment, then the config file, then
text; ``Settings.format_for`` narrows it to the formats a command has.
"""

from __future__ import annotations

CHECK_FORMATS = ("text", "json", "markdown", "html", "junit")
PROFILE_FORMATS = ("text", "json", "markdown", "html", "junit")
COMPARE_FORMATS = ("text", "json", "markdown", "html", "junit")
GOODPUT_FORMATS = ("text", "json", "markdown", "html", "junit")
HANG_FORMATS = ("text", "json", "markdown", "html", "junit")
BENCH_FORMATS = ("text", "json", "markdown", "html", "junit")
DIAG_FORMATS = ("text", "json", "markdown", "html", "junit")
MEMORY_FORMATS = ("text", "json", "markdown", "html", "junit")
LIST_FORMATS = ("text", "json")
COMMAND_FORMATS = {"check": CHECK_FORMATS, "merge": CHECK_FORMATS, "profile analyze": PROFILE_FORMATS,
                   "compare": COMPARE_FORMATS, "goodput": GOODPUT_FORMATS, "hang": HANG_FORMATS,
                   "bench": BENCH_FORMATS, "diag": DIAG_FORMATS, "memory": MEMORY_FORMATS,
                   "list-checks": LIST_FORMATS}
"""What each command's ``--format`` takes (the reference page lists it)."""
FORMAT_ENV = "TPUDOCTOR_FORMAT"
