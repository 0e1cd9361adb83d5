"""One table serves every command's report: each format a command offers has a view and an emitter
(tpudoctor.rendering.VIEWS, EMITTERS); each entry loads, and a document of no known kind is a clear error, not a
guess."""

from __future__ import annotations

import json

import pytest
from paths import TESTS

from tpudoctor.errors import TpudoctorError
from tpudoctor.formats import COMMAND_FORMATS
from tpudoctor.rendering import EMITTERS, VIEWS, _load, render

KINDS = {"profile analyze": ["profile"], "goodput": ["goodput"], "hang": ["hang"], "bench": ["bench"],
         "diag": ["diag"], "memory": ["memory"],
         "compare": ["tpudoctor.profile_compare", "tpudoctor.profile_history", "tpudoctor.goodput_compare"]}


def test_every_format_of_every_command_has_one_renderer():
    missing = [(kind, fmt) for command, kinds in KINDS.items() for kind in kinds
               for fmt in COMMAND_FORMATS[command]
               if not (kind in VIEWS and (fmt == "json" or fmt in EMITTERS))]
    assert missing == []


@pytest.mark.parametrize("target", sorted({*VIEWS.values(), *EMITTERS.values()}))
def test_every_view_and_emitter_loads(target):
    assert callable(_load(target))


def test_a_document_of_no_known_kind_is_a_clear_error():
    with pytest.raises(TpudoctorError, match="no view for a mystery document"):
        render({"kind": "mystery"}, "markdown")


def test_a_two_line_fix_is_two_lines_in_every_format():
    """Memory's batch fix is two ways (``Serve 3 per device ...`` and ``Or spread the batch ...``); JUnit's
    testcase folded them into one line ("... instead of one Or spread ...")."""

    stored = TESTS / "snapshots" / "files" / "memory_capture.json"
    document = json.loads(stored.read_text(encoding="utf-8").replace("<normalised>", "0"))
    first, second = ("fix: Serve 3 per device at a time (5 as batches of 3 and 2): the same requests in two calls "
                     "instead of one", "fix: Or spread the batch over more devices (a larger data axis)")
    for fmt in ("text", "junit"):
        lines = "\n".join(line.strip() for line in render(document, fmt).splitlines())
        assert f"\n{first}\n{second}" in lines, fmt
    assert "<br>fix: Or spread the batch" in render(document, "html")
    assert "  - fix: Or spread the batch" in render(document, "markdown")


def test_one_finding_line_style_in_every_kinds_text():
    """Every stored text output writes a finding as ``[✗] ID Title (scope): message``: a status box (never a
    severity such as profile's ``[HIGH]``, never goodput's ERROR as ``[✗]``), then the id."""
    import re

    from tpudoctor.reports.view import MARKERS

    boxes = "|".join(re.escape(m) for m in MARKERS.values())
    other_box = re.compile(r"^\s*(?:- )?\[(CRITICAL|HIGH|MEDIUM|LOW|INFO|FAIL|WARN|PASS|ERROR|SKIP)\]")
    line = re.compile(rf"^\s*(?:- )?(?:{boxes}) \S+ ")
    stored = sorted((TESTS / "snapshots").rglob("*.txt"))
    assert len(stored) > 40
    for path in stored:
        for text in path.read_text(encoding="utf-8").splitlines():
            assert not other_box.match(text), (path.name, text)
            if re.match(rf"^\s*(?:{boxes})", text):
                assert line.match(text), (path.name, text)
