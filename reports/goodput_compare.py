"""``tpudoctor compare`` of two goodput reports: text, markdown, html and JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from tpudoctor.findings import DEFAULT_GATE, Gate, Status
from tpudoctor.reports import escape
from tpudoctor.reports.escape import markdown as md


def _v(x: Any) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.3f}" if isinstance(x, float) else str(x)


def _verdict(result: dict[str, Any]) -> str:
    if not result["comparable"]:
        return "not comparable: " + "; ".join(result["comparability"]["reasons"])
    if result["regressed"]:
        return f"REGRESSION: {', '.join(result['regressed_by'])} worse by more than {result['threshold_points']} pt"
    delta = next(r for r in result["figures"] if r["figure"] == "ettr")["delta"]
    return f"ETTR {result['baseline']['ettr']} -> {result['candidate']['ettr']} ({'+' if (delta or 0) >= 0 else ''}{delta})"


def render(result: dict[str, Any], fmt: str, *, gate: Gate = DEFAULT_GATE) -> str:
    """``gate``: the run's; a regression is a JUnit failure only where it fails the run."""
    if fmt == "json":
        return json.dumps(result, indent=2) + "\n"
    rows = result["figures"]
    title = (f"goodput: baseline {', '.join(result['baseline']['sources'])} vs candidate "
             f"{', '.join(result['candidate']['sources'])}")
    if fmt == "markdown":
        out = [f"# {md(title)}", "", f"**{md(_verdict(result))}**", "", "| figure | baseline | candidate | delta | |",
               "|---|---:|---:|---:|---|"]
        out += [f"| {md(r['figure'])} | {md(_v(r['baseline']))} | {md(_v(r['candidate']))} | {md(_v(r['delta']))} | "
                f"{md(r['direction'])} |" for r in rows]
        return "\n".join(out) + "\n"
    if fmt == "html":
        e = escape.html
        out = ["<!doctype html><html><head><meta charset='utf-8'><title>tpudoctor goodput comparison</title></head>"
               f"<body><h1>{e(title)}</h1><p><b>{e(_verdict(result))}</b></p><table><tr><th>figure</th>"
               "<th>baseline</th><th>candidate</th><th>delta</th><th></th></tr>"]
        out += [f"<tr><td>{e(r['figure'])}</td><td>{e(_v(r['baseline']))}</td><td>{e(_v(r['candidate']))}</td>"
                f"<td>{e(_v(r['delta']))}</td><td>{e(r['direction'])}</td></tr>" for r in rows]
        return "\n".join(out) + "</table></body></html>\n"
    if fmt == "junit":
        suites = ET.Element("testsuites", name="tpudoctor")
        failed = bool(result["regressed"]) and gate.fails(Status.FAIL)
        suite = ET.SubElement(suites, "testsuite", name="tpudoctor compare (goodput)", tests="1",
                              failures="1" if failed else "0", errors="0", skipped="0")
        case = ET.SubElement(suite, "testcase", classname="tpudoctor.goodput.compare", name="no regression")
        if failed:
            ET.SubElement(case, "failure", message=_verdict(result)[:500], type="regression")
        else:
            ET.SubElement(case, "system-out").text = _verdict(result)
        return escape.junit_document(suites)
    p = escape.plain
    width = max(len(p(r["figure"])) for r in rows)
    out = [p(title), p(_verdict(result)), ""]
    out += [f"  {p(r['figure']):<{width}}  {p(_v(r['baseline'])):>12}  {p(_v(r['candidate'])):>12}  "
            f"{p(_v(r['delta'])):>10}  {p(r['direction'])}" for r in rows]
    return "\n".join(out) + "\n"
