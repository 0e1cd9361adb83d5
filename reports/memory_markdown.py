"""Memory report as Markdown: the findings with their fixes, then per host the allocators' peaks, the program
judged (buckets, fixes), per log the out-of-memory listing, and the chips across the pod."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Finding, Status
from tpudoctor.reports import escape
from tpudoctor.reports.markers import MARKERS, scope_words
from tpudoctor.reports.memory_words import (
    ALLOCATOR_COLUMNS,
    BUCKET_COLUMNS,
    BUFFER_COLUMNS,
    CHIP_COLUMNS,
    FIX_COLUMNS,
    LISTING_COLUMNS,
    PROFILE_DEVICE_COLUMNS,
    SITE_COLUMNS,
    allocator_row,
    bucket_rows,
    buffer_row,
    chip_row,
    fix_row,
    headline,
    listing_header,
    listing_row,
    profile_device_row,
    profile_title,
    site_row,
    size,
)


def _table(columns: tuple[str, ...], rows: list[list[str]]) -> list[str]:
    return (["", "| " + " | ".join(escape.markdown(c) for c in columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(escape.markdown_code(c, in_table=True) if c not in ("", "-") else "-" for c in row)
               + " |" for row in rows] + [""])


def render(doc: dict[str, Any], *, verbose: bool = False) -> str:
    lines = [f"# {escape.markdown(headline(doc))}", "", "## Findings", ""]
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        where = scope_words(f.scope)
        lines.append(f"- {escape.markdown(MARKERS[f.status])} **{escape.markdown(f.title)}**: "
                     f"{escape.markdown(f.message)}" + (f" ({escape.markdown(where)})" if where else ""))
        if f.remediation and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            lines += [f"  - fix: {escape.markdown(t)}" for t in f.remediation.text.splitlines() if t]
            lines += [f"  - {escape.markdown_code(c)}" for c in f.remediation.commands]
        if verbose:
            lines += [f"  - {escape.markdown(k)}: {escape.markdown_code(v)}" for k, v in f.evidence.items()]
    for host in doc["hosts"]:
        lines += ["", f"## {escape.markdown(host['host'])}", "", f"Capture: {escape.markdown_code(host['source'])}"]
        lines += [f"- note: {escape.markdown(n)}" for n in host["notes"]]
        if host["allocators"]:
            lines += _table(ALLOCATOR_COLUMNS, [allocator_row(a) for a in host["allocators"]])
        for a in host["allocators"]:
            if a["peak_buffers"]:
                lines += [f"### Buffers live at allocator {escape.markdown(a['allocator'])}'s peak"]
                lines += _table(BUFFER_COLUMNS, [buffer_row(b) for b in a["peak_buffers"]])
        for p in host["programs"]:
            lines += [f"### Program {escape.markdown_code(p['program'])}", "",
                      f"{escape.markdown(p['why'])}; footprint {escape.markdown(size(p['attribution']['peak_bytes']))}"]
            lines += _table(BUCKET_COLUMNS, bucket_rows(p))
            if p["fixes"]:
                lines += ["Fixes, best first:"] + _table(FIX_COLUMNS, [fix_row(f) for f in p["fixes"]])
            else:
                lines += ["No fix saves 2% of the peak or more.", ""]
    for text in doc["texts"]:
        lines += ["", f"## {escape.markdown(text['source'])}", ""]
        for listing in text["listings"]:
            lines += [f"**{escape.markdown(listing_header(listing))}**"]
            if listing["allocations"]:
                lines += _table(LISTING_COLUMNS, [listing_row(a) for a in listing["allocations"]])
            lines += [f"- does not add up: {escape.markdown(p)}" for p in listing["problems"]]
            lines += [f"- fixes: unknown ({escape.markdown(listing['fixes_why'])})", ""]
    for profile in doc.get("profiles") or []:
        lines += ["", f"## {escape.markdown(profile_title(profile))}", ""]
        lines += _table(PROFILE_DEVICE_COLUMNS, [profile_device_row(d) for d in profile["devices"]])
        if profile["top_sites"]:
            lines += ["Where the bytes were made:"] + _table(SITE_COLUMNS, [site_row(t) for t in profile["top_sites"]])
    pod = doc["pod"]
    lines += ["", "## Chips across the pod"]
    if pod["chips"]:
        lines += _table(CHIP_COLUMNS, [chip_row(c) for c in pod["chips"]])
    lines += ["", f"Outliers: {escape.markdown(pod['verdict'])}"]
    return "\n".join(lines) + "\n"
