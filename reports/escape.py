"""One escaping rule per output format, for every value that comes from outside tpudoctor: a report read
back, a worker's answer, a log line, a file or host name, an op name in a capture.

Such a value may hold control characters, terminal escape sequences (ESC/OSC, which can retitle a window,
clear the screen or forge a line such as ``[✓] ALL GOOD``), newlines, Unicode bidi overrides (text that
reads in another order than it runs), HTML and Markdown. Each renderer formats its own markup and passes
every outside value through the rule of its format, and only that rule:

* ``text``/``plain``: one line; newlines and tabs become spaces, other control characters their visible
  Unicode control picture (ESC shows as ␛: the sequence is seen, never run), C1 controls and bidi
  controls U+FFFD; ``text`` also escapes rich console markup.
* ``markdown``: ``plain``, then HTML's ``& < >`` as entities and Markdown's metacharacters backslashed;
  ``markdown_code`` a code span no backtick can end, ``markdown_fence`` a fenced block no line can close.
* ``html``: newlines kept, the other controls as above, then HTML-escaped (quotes too).
* JUnit: what XML 1.0 cannot hold (NUL, ESC, ...) made visible as above (``lines``; an attribute ``plain``):
  ``junit_document`` applies it to every attribute and text of a tree before it is written.
"""

from __future__ import annotations

import html as _html
import re
import xml.etree.ElementTree as ET
from typing import Any

_REPLACEMENT = "\ufffd"
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_LINE_BREAKS = "\n\r\u2028\u2029\x85\x0b\x0c"


def _table(*, keep_newlines: bool) -> dict[int, str | None]:
    table: dict[int, str | None] = {c: chr(0x2400 + c) for c in range(0x20)}  # C0 controls as control pictures: ESC -> ␛
    table[0x7F] = "\u2421"  # DEL -> ␡
    table.update({c: _REPLACEMENT for c in range(0x80, 0xA0)})  # C1 controls (CSI 0x9b, OSC 0x9d)
    table.update({ord(c): _REPLACEMENT for c in _BIDI})
    table.update({0xFFFE: _REPLACEMENT, 0xFFFF: _REPLACEMENT})  # not characters (and not XML)
    table.update({c: _REPLACEMENT for c in range(0xD800, 0xE000)})  # lone surrogates (not UTF-8 either)
    if keep_newlines:
        table.update({ord("\n"): "\n", ord("\t"): "\t", ord("\r"): None})
    else:
        table.update({ord(c): " " for c in _LINE_BREAKS + "\t"})
    return table


_ONE_LINE = _table(keep_newlines=False)
_MULTI_LINE = _table(keep_newlines=True)


def _str(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def plain(value: Any) -> str:
    """One line of plain text with nothing a terminal would act on."""
    return _str(value).translate(_ONE_LINE)


def lines(value: Any) -> str:
    """``plain`` that keeps newlines and tabs (a traceback, a multi-line body)."""
    return _str(value).translate(_MULTI_LINE)


def text(value: Any) -> str:
    """``plain`` for a rich console: its markup (``[bold]``) escaped too."""
    from rich.markup import escape

    return escape(plain(value))


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_BACKSLASHED = "\\`*#|~"
_MD_SPECIAL = re.compile("[" + re.escape("".join(_MD_ENTITIES) + _MD_BACKSLASHED) + "]"
                         + "|\\[(?=[^\\]]*\\]\\s*[(\\[:])|\\](?=\\s*[(\\[:])|(?<!\\w)_|_(?!\\w)")
"""Brackets only where they could make a link or image (``](``, ``][``, ``]:``): an HLO shape such as
``f32[8,128]`` stays as it is; ``_`` inside a word (``step_time_ms``) cannot start emphasis in CommonMark."""


def markdown(value: Any) -> str:
    """Inline Markdown text that renders as the value: no HTML, no emphasis, link, heading or table cell."""
    return _MD_SPECIAL.sub(lambda m: _MD_ENTITIES.get(m.group(), "\\" + m.group()), plain(value))


def markdown_code(value: Any, *, in_table: bool = False) -> str:
    """A code span that holds the value whatever backticks it has (GFM: a longer fence, padded)."""
    content = plain(value)
    if in_table:
        content = content.replace("|", "\\|")  # GFM splits table cells before it reads code spans
    longest = max((len(run) for run in re.findall("`+", content)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if content.startswith(("`", " ")) or content.endswith(("`", " ")) or not content else ""
    return f"{fence}{pad}{content}{pad}{fence}"


def markdown_prose(value: Any, *, in_table: bool = False) -> str:
    """Prose that marks code with single backticks (a fix: ``wrap each step in `with ...:` ``): each code span
    as ``markdown_code``, the rest as ``markdown``, so it reads as written and nothing in it becomes markup
    (``in_table``: in a table cell, where a ``|`` in a code span splits the cell too)."""
    parts = re.split(r"`([^`\n]+)`", plain(value))
    return "".join(markdown_code(part, in_table=in_table) if i % 2 else markdown(part) for i, part in enumerate(parts))


def markdown_fence(rows: list[Any], info: str = "") -> list[str]:
    """A fenced code block, one line per row, that no row can close."""
    body = [plain(row) for row in rows]
    longest = max((len(run) for row in body for run in re.findall("`+", row)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *body, fence]


def markdown_link(url: Any) -> str:
    """An autolink for a plain http(s) URL; anything else as text."""
    value = plain(url)
    return f"<{value}>" if re.fullmatch(r"https?://[^\s<>`]+", value) else markdown(value)


def html(value: Any) -> str:
    """Text in HTML (element content or a quoted attribute)."""
    return _html.escape(lines(value), quote=True)


def junit_document(root: ET.Element) -> str:
    """The JUnit XML of ``root``, every attribute and text made XML-safe first (whatever put them there)."""
    for element in root.iter():
        for name, value in element.attrib.items():  # an attribute is one line: a newline in it forges a row
            element.set(name, plain(value))
        if element.text:  # ``lines``: what XML 1.0 can hold (ElementTree escapes the markup itself)
            element.text = lines(element.text)
        if element.tail:
            element.tail = lines(element.tail)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
