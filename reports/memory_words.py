"""What every memory renderer says the same way: the headline, byte sizes, and the rows of its tables (each cell a
plain string the renderer escapes by its format's rule)."""

from __future__ import annotations

from typing import Any


def size(n: Any) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def percent(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.1f}%"


def headline(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    bad = s["FAIL"] + s["ERROR"]
    verdict = "out of memory or a fix that makes it fit" if bad else ("fixes to consider" if s["WARN"] else
                                                                       "nothing to shrink")
    hosts, texts, profiles = len(doc["hosts"]), len(doc["texts"]), len(doc.get("profiles") or [])
    parts = [f"{hosts} capture(s)" if hosts else "", f"{texts} log(s)" if texts else "",
             f"{profiles} device memory profile(s)" if profiles else ""]
    return (f"tpudoctor memory: {verdict} ({', '.join(p for p in parts if p)}; {s['FAIL']} failed, {s['WARN']} "
            f"warned, {s['PASS']} passed, {doc['duration_s']:.1f} s)")


ALLOCATOR_COLUMNS = ("allocator", "peak", "capacity", "of capacity", "heap", "stack", "fragmentation", "at (ms)",
                     "step", "program at the peak")


def allocator_row(a: dict[str, Any]) -> list[str]:
    share = a["peak_bytes"] / a["capacity_bytes"] if a["capacity_bytes"] else None
    program = a["program"] or "-"
    if a["program"] and a["program_how"] != "running at the peak":
        program += " (largest)"
    return [a["allocator"] + ("" if a["chip"] else " (host)"), size(a["peak_bytes"]), size(a["capacity_bytes"]),
            percent(share), size(a["heap_bytes"]), size(a["stack_bytes"]), percent(a["fragmentation"]),
            f"{a['time_ms']:.3f}", str(a["step"]), program]


BUFFER_COLUMNS = ("bytes", "count", "share of peak", "op", "shape", "dtype")


def buffer_row(b: dict[str, Any]) -> list[str]:
    return [size(b["total_bytes"]), str(b["count"]), percent(b["share_of_peak"]), b["tf_op"] or "-",
            b["shape"] or "-", b["dtype"] or "-"]


FIX_COLUMNS = ("fix", "saves", "of peak", "confidence", "why")


def fix_row(f: dict[str, Any]) -> list[str]:
    pct = f.get("saving_percent_of_peak")
    return [f["title"], size(f["saving_bytes"]), "-" if pct is None else f"{pct:.1f}%", f["confidence"] or "-",
            f.get("confidence_why") or ""]


def bucket_rows(program: dict[str, Any]) -> list[list[str]]:
    att = program["attribution"]
    total = att["total_bytes"] or 1
    return [[name.replace("_", " "), size(n), percent(n / total),
             (att["confidence"].get(name) or {}).get("level", "")]
            for name, n in sorted(att["buckets_bytes"].items(), key=lambda kv: -kv[1]) if n]


BUCKET_COLUMNS = ("bucket", "bytes", "share", "confidence")
CHIP_COLUMNS = ("host", "chip", "peak", "vs median")


def chip_row(c: dict[str, Any]) -> list[str]:
    above = c.get("above_median_fraction")
    return [c["host"], c["allocator"], size(c["peak_bytes"]), "-" if above is None else f"{100 * above:+.2f}%"]


LISTING_COLUMNS = ("#", "size", "shape", "op", "source")


def listing_row(a: dict[str, Any]) -> list[str]:
    return [str(a["rank"]), size(a["size_bytes"]), a["shape"] or "-", a["op_name"] or a["op_type"] or "-",
            a["source"] or "-"]


def listing_header(listing: dict[str, Any]) -> str:
    h = listing["header"]
    if h:
        return (f"{h['memory_space']}: {size(h['used_bytes'])} used of {size(h['capacity_bytes'])}, over by "
                f"{size(h['exceeded_bytes'])} ({'compile' if h['at_compile'] else 'run'} time)")
    for key in ("total", "program"):
        if listing[key] and listing[key]["total_bytes"] is not None:
            return f"{listing[key]['title']}: {size(listing[key]['total_bytes'])}"
    return "out-of-memory report"


PROFILE_DEVICE_COLUMNS = ("device", "live", "arrays", "array bytes", "executables")


def profile_device_row(d: dict[str, Any]) -> list[str]:
    return [d["device"], size(d["bytes"]), str(d["buffers"]), size(d["buffer_bytes"]), size(d["executable_bytes"])]


SITE_COLUMNS = ("bytes", "share", "count", "devices", "kind", "made at")


def site_row(s: dict[str, Any]) -> list[str]:
    return [size(s["bytes"]), percent(s["share"]), str(s["count"]), str(s["devices"]), s["kind"], s["site"]]


def profile_title(p: dict[str, Any]) -> str:
    return (f"device memory profile {p['source']}: {size(p['total_bytes'])} live on {len(p['devices'])} device(s) "
            f"({p['samples']} samples)")
