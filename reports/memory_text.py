"""Memory report as text: the findings (fixes with their saving), then per host each allocator's peak, the
program judged with its buckets and fixes, per log its out-of-memory listing, and the chips across the pod."""

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
)


def _table(columns: tuple[str, ...], rows: list[list[str]], indent: str = "  ") -> list[str]:
    cells = [list(columns)] + [[escape.plain(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


def render(doc: dict[str, Any], *, verbose: bool = False) -> str:
    lines = [escape.plain(headline(doc)), ""]
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        where = scope_words(f.scope)
        lines.append(f"{MARKERS[f.status]} {escape.plain(f.title)}: {escape.plain(f.message)}"
                     + (f" [{escape.plain(where)}]" if where and f.status is not Status.PASS else ""))
        if f.remediation and f.status in (Status.FAIL, Status.WARN, Status.ERROR):
            lines += [f"    fix: {escape.plain(t)}" for t in f.remediation.text.splitlines() if t]
            lines += [f"      $ {escape.plain(c)}" for c in f.remediation.commands]
        if verbose and f.evidence:
            lines += [f"    {escape.plain(k)}: {escape.plain(v)}" for k, v in f.evidence.items()]
    for host in doc["hosts"]:
        lines += ["", f"== {escape.plain(host['host'])} ({escape.plain(host['source'])})"]
        lines += [f"  note: {escape.plain(n)}" for n in host["notes"]]
        if host["allocators"]:
            lines += _table(ALLOCATOR_COLUMNS, [allocator_row(a) for a in host["allocators"]])
        for a in host["allocators"] if verbose else host["allocators"][:1]:
            if a["peak_buffers"]:
                lines += ["", f"  buffers live at allocator {escape.plain(a['allocator'])}'s peak:"]
                lines += _table(BUFFER_COLUMNS, [buffer_row(b) for b in a["peak_buffers"]], "    ")
        for p in host["programs"]:
            lines += ["", f"  program {escape.plain(p['program'])}: {escape.plain(p['why'])}; footprint "
                          f"{escape.plain(bucket_total(p))}"]
            lines += _table(BUCKET_COLUMNS, bucket_rows(p), "    ")
            if p["fixes"]:
                lines += ["", "    fixes, best first:"]
                lines += _table(FIX_COLUMNS, [fix_row(f) for f in p["fixes"]], "    ")
            else:
                lines.append("    no fix saves 2% of the peak or more")
    for text in doc["texts"]:
        lines += ["", f"== {escape.plain(text['source'])}"]
        for listing in text["listings"]:
            lines.append(f"  {escape.plain(listing_header(listing))}")
            if listing["allocations"]:
                lines += _table(LISTING_COLUMNS, [listing_row(a) for a in listing["allocations"]], "    ")
            for problem in listing["problems"]:
                lines.append(f"    does not add up: {escape.plain(problem)}")
            lines.append(f"    fixes: unknown ({escape.plain(listing['fixes_why'])})")
    for profile in doc.get("profiles") or []:
        lines += ["", f"== {escape.plain(profile_title(profile))}"]
        lines += _table(PROFILE_DEVICE_COLUMNS, [profile_device_row(d) for d in profile["devices"]])
        if profile["top_sites"]:
            lines += ["", "  where the bytes were made:"]
            lines += _table(SITE_COLUMNS, [site_row(t) for t in profile["top_sites"]], "    ")
    pod = doc["pod"]
    if pod["chips"]:
        lines += ["", "== chips across the pod"]
        lines += _table(CHIP_COLUMNS, [chip_row(c) for c in pod["chips"]])
    lines += ["", f"outliers: {escape.plain(pod['verdict'])}"]
    return "\n".join(lines) + "\n"


def bucket_total(program: dict[str, Any]) -> str:
    from tpudoctor.reports.memory_words import size

    return size(program["attribution"]["peak_bytes"])
