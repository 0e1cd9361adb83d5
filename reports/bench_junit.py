"""Bench result as JUnit XML: one testcase for training, one for the throughput gate."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from tpudoctor.reports.bench_summary import headline, loss_line, mismatch_lines, verdict_line


def render(document: Mapping[str, Any]) -> str:
    key = document["key"]
    m = document["measurement"]
    comparison = document.get("comparison")
    seconds = m["compile_time_ms"] / 1000.0 + m["windows"] * m["steps_per_window"] * m["step_time_ms_median"] / 1000.0
    regressed = bool(comparison and comparison["gate"]["verdict"] == "regression")
    failures = int(not m["loss_dropped"]) + int(regressed)
    suites = ET.Element("testsuites", name="tpudoctor")
    suite = ET.SubElement(suites, "testsuite", name="tpudoctor bench", tests="2", failures=str(failures),
                          errors="0", skipped="0" if comparison else "1", time=f"{seconds:.3f}",
                          timestamp=document["created_at"], hostname=document["host"])
    props = ET.SubElement(suite, "properties")
    for name, value in key.items():
        ET.SubElement(props, "property", name=name, value="" if value is None else str(value))
    classname = f"tpudoctor.bench.{key['model']}"
    train = ET.SubElement(suite, "testcase", classname=classname, name="loss drops", time=f"{seconds:.3f}")
    if not m["loss_dropped"]:
        ET.SubElement(train, "failure", message=loss_line(document), type="training").text = headline(document)
    gate = ET.SubElement(suite, "testcase", classname=classname, name="throughput vs baseline", time="0")
    if not comparison:
        ET.SubElement(gate, "skipped", message="no --baseline given")
    else:
        body = "\n".join([headline(document), *mismatch_lines(document)])
        if regressed:
            ET.SubElement(gate, "failure", message=verdict_line(document) or "", type="regression").text = body
        else:
            ET.SubElement(gate, "system-out").text = f"{verdict_line(document)}\n{body}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
