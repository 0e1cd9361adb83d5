"""Coverage-guided fuzzing of merge and the renderers: python fuzz/atheris_merge_render.py CORPUS_DIR... -runs=N

The input is one worker's saved report; a readable one is merged with a good one and rendered in every format,
which must hold no escape sequence (text) and parse (JUnit, JSON)."""

import json
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import atheris
from _harness import run

with atheris.instrument_imports():
    from tpudoctor.pod.merge import merge_outcomes
    from tpudoctor.pod.report_store import read_reports
    from tpudoctor.rendering import render

RUN = Path(tempfile.mkdtemp())


def target(data: bytes) -> None:
    (RUN / "0.json").write_bytes(data)
    merged = merge_outcomes(read_reports([str(RUN)]))
    text = render(merged.to_dict(), "text")
    assert "\x1b" not in text and "\x07" not in text
    ET.fromstring(render(merged.to_dict(), "junit").split("\n", 1)[1])
    json.loads(render(merged.to_dict(), "json"))
    for fmt in ("markdown", "html"):
        render(merged.to_dict(), fmt)


if __name__ == "__main__":
    run(target)
