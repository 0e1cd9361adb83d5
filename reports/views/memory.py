"""The memory report's view: the findings (fixes with their saving), then per host each allocator's peak, the
buffers live at it, each program judged with its buckets and fixes, per log its out-of-memory listing, the device
memory profiles, and the chips across the pod (a bar each in HTML)."""

from __future__ import annotations

from typing import Any

from tpudoctor.findings import Status
from tpudoctor.preflight.verdict import preflight_verdict
from tpudoctor.reports.view import Bar, Chart, Section, Suite, Table, View, findings_of, properties
from tpudoctor.units import format_bytes, format_gib


def size(n: Any) -> str:
    """``units.format_bytes`` (5 TiB reads ``5.00 TiB``, not ``5120.00 GiB``); ``-`` for none."""
    return "-" if n is None else format_bytes(n)


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


def _allocator(a: dict[str, Any]) -> tuple[str, ...]:
    program = a["program"] or "-"
    if a["program"] and a["program_how"] != "running at the peak":
        program += " (largest)"
    return (a["allocator"] + ("" if a["chip"] else " (host)"), size(a["peak_bytes"]), size(a["capacity_bytes"]),
            percent(a["peak_share_of_capacity"]), size(a["heap_bytes"]), size(a["stack_bytes"]), percent(a["fragmentation"]),
            f"{a['time_ms']:.3f}", str(a["step"]), program)


def _buckets(att: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    """A peak's buckets, largest first: name, bytes, share, confidence (a program's and the preflight's alike)."""
    total = att["total_bytes"] or 1
    return tuple((name.replace("_", " "), size(n), percent(n / total),
                  (att["confidence"].get(name) or {}).get("level", ""))
                 for name, n in sorted(att["buckets_bytes"].items(), key=lambda kv: -kv[1]) if n)


def _fix(f: dict[str, Any]) -> tuple[str, ...]:
    pct = f.get("saving_percent_of_peak")
    return (f["title"], size(f["saving_bytes"]), "-" if pct is None else f"{pct:.1f}%", f["confidence"] or "-",
            f.get("confidence_why") or "")


def listing_header(listing: dict[str, Any]) -> str:
    h = listing["header"]
    if h:
        return (f"{h['memory_space']}: {size(h['used_bytes'])} used of {size(h['capacity_bytes'])}, over by "
                f"{size(h['exceeded_bytes'])} ({'compile' if h['at_compile'] else 'run'} time)")
    for key in ("total", "program"):
        if listing[key] and listing[key]["total_bytes"] is not None:
            return f"{listing[key]['title']}: {size(listing[key]['total_bytes'])}"
    return "out-of-memory report"


def _timeline(a: dict[str, Any]) -> Chart | None:
    """The allocator's bytes in use over the capture (the document's sampled timeline), its peak marked, its
    capacity dashed where it is within a quarter of the scale."""
    line = a["timeline"]
    if not line["time_ms"]:
        return None
    top = max(max(line["bytes_in_use"]), a["peak_bytes"], 1)
    capacity = a["capacity_bytes"]
    shown_cap = capacity if capacity and capacity <= 1.25 * top else None
    return Chart(f"allocator {a['allocator']}: bytes in use", line=tuple(zip(line["time_ms"], line["bytes_in_use"],
                                                                            strict=True)),
                 peak=Bar(str(line["peak_time_ms"]), a["peak_bytes"], f"peak {size(a['peak_bytes'])} at "
                                                                       f"{a['time_ms']:.3f} ms"),
                 limit=Bar("capacity", shown_cap, f"capacity {size(shown_cap)}") if shown_cap else None,
                 axis=(size(max(top, shown_cap or 0)), f"{min(line['time_ms']):.1f} ms",
                       f"{max(line['time_ms']):.1f} ms"))


def _host(host: dict[str, Any]) -> list[Section]:
    allocators = host["allocators"]
    out = [Section(f"host {host['host']} ({host['source']})", notes=tuple(f"note: {n}" for n in host["notes"]),
                   table=Table(("allocator", "peak", "capacity", "of capacity", "heap", "stack", "fragmentation",
                                "at (ms)", "step", "program at the peak"), tuple(map(_allocator, allocators)),
                               "lrrrrrrrrl") if allocators else None)]
    out += [Section(level=3, verbose_only=True, chart=_timeline(a)) for a in allocators if _timeline(a)]
    out += [Section(f"buffers live at allocator {a['allocator']}'s peak", level=3, verbose_only=i > 0,
                    table=Table(("bytes", "count", "share of peak", "op", "shape", "dtype"), tuple(
                        (size(b["total_bytes"]), str(b["count"]), percent(b["share_of_peak"]), b["tf_op"] or "-",
                         b["shape"] or "-", b["dtype"] or "-") for b in a["peak_buffers"]), "rrr"))
            for i, a in enumerate(allocators) if a["peak_buffers"]]
    for p in host["programs"]:
        out.append(Section(f"program {p['program']}", level=3, notes=(
            f"{p['why']}; footprint {size(p['attribution']['peak_bytes'])}",),
            table=Table(("bucket", "bytes", "share", "confidence"), _buckets(p["attribution"]), "lrr")))
        out.append(Section("fixes, best first", level=3, table=Table(
            ("fix", "saves", "of peak", "confidence", "why"), tuple(map(_fix, p["fixes"])), "lrr"))
            if p["fixes"] else Section(level=3, notes=("no fix saves 2% of the peak or more",)))
    return out


def _text_fixes(listing: dict[str, Any]) -> tuple[str, ...]:
    """A listing's fixes ranked from its own figures (estimates), or unknown and what would tell."""
    if not isinstance(listing["fixes"], list):
        return (f"fixes: unknown ({listing['fixes_why']})",)
    return (*(f"fix {i}: {f['fix']}, saves at most {size(f['saves_bytes_at_most'])} ({f['basis']})"
              for i, f in enumerate(listing["fixes"], 1)), f"fixes: {listing['fixes_why']}")


def _text(text: dict[str, Any]) -> list[Section]:
    out = [Section(f"log {text['source']}")]
    for i, listing in enumerate(text["listings"], 1):
        rows = tuple((str(a["rank"]), size(a["size_bytes"]), a["shape"] or "-", a["op_name"] or a["op_type"] or "-",
                      a["source"] or "-") for a in listing["allocations"])
        out.append(Section(f"listing {i}: {listing_header(listing)}", level=3, notes=(
            *(f"does not add up: {p}" for p in listing["problems"]), *_text_fixes(listing)),
            table=Table(("#", "size", "shape", "op", "source"), rows, "rr") if rows else None))
    return out


def _profile(p: dict[str, Any]) -> list[Section]:
    title = (f"device memory profile {p['source']}: {size(p['total_bytes'])} live on {len(p['devices'])} device(s) "
             f"({p['samples']} samples)")
    out = [Section(title, table=Table(("device", "live", "arrays", "array bytes", "executables"), tuple(
        (d["device"], size(d["bytes"]), str(d["buffers"]), size(d["buffer_bytes"]), size(d["executable_bytes"]))
        for d in p["devices"]), "lrrrr"))]
    if p["top_sites"]:
        out.append(Section("where the bytes were made", level=3, table=Table(
            ("bytes", "share", "count", "devices", "kind", "made at"), tuple(
                (size(s["bytes"]), percent(s["share"]), str(s["count"]), str(s["devices"]), s["kind"], s["site"])
                for s in p["top_sites"]), "rrrr")))
    return out


def _pod(pod: dict[str, Any]) -> list[Section]:
    chips = pod["chips"]
    out = []
    if chips:
        rows = tuple((c["host"], c["allocator"], size(c["peak_bytes"]), "-" if c.get("above_median_fraction") is None
                      else f"{100 * c['above_median_fraction']:+.2f}%") for c in chips)
        out.append(Section("chips across the pod", table=Table(("host", "chip", "peak", "vs median"), rows, "llrr"),
                           chart=Chart("peak per chip", tuple(Bar(f"{c['host']} {c['allocator']}",
                                                                  float(c["peak_bytes"] or 0), size(c["peak_bytes"]))
                                                              for c in chips))))
    return [*out, Section(notes=(f"outliers: {pod['verdict']}",))]


def view(doc: dict[str, Any]) -> View:
    findings = findings_of(doc)
    sections = [Section("Findings", findings=findings)]
    for host in doc["hosts"]:
        sections += _host(host)
    for text in doc["texts"]:
        sections += _text(text)
    for profile in doc.get("profiles") or ():
        sections += _profile(profile)
    sections += _pod(doc["pod"])
    suite = Suite("tpudoctor memory", "tpudoctor.memory", duration_s=doc["duration_s"], properties=properties((
        ("inputs", "; ".join(doc["inputs"])), ("hosts", len(doc["hosts"])), ("chips", len(doc["pod"]["chips"])),
        ("pod_verdict", doc["pod"]["verdict"]))))
    return View("memory", headline(doc), (), tuple(sections), findings, suite)


# ---- the preflight: a program compiled for a topology ---------------------------------------------------------

def _saving(n: int | None) -> str:
    return format_gib(n) + (" (it adds)" if n is not None and n < 0 else "")


def preflight_view(doc: dict[str, Any]) -> View:
    verdict = preflight_verdict(doc)  # the verdict the exit status is judged on
    title = f"tpudoctor memory preflight: {doc['program']} on {doc['topology']}"
    mesh = ",".join(f"{k}={v}" for k, v in doc["mesh"].items())
    notes = () if doc["skipped"] else (f"{doc['devices']} x {doc['device_kind']}, mesh {mesh}; the compiler allows "
                                       f"{format_gib(doc['limit_bytes'])} a chip",)
    error = doc["error"].splitlines()[:12] if verdict.status is Status.FAIL else []
    sections = [Section("Verdict", findings=(verdict,), code=tuple(error), marked=True)]
    att = doc["attribution"]
    if att:
        sections.append(Section(f"Peak by bucket (the buffer assignment; {att['named_fraction']:.0%} named)",
                                table=Table(("bucket", "bytes", "share", "confidence"), _buckets(att), "lrr")))
    if doc["largest_buffers"]:
        sections.append(Section("Largest buffers", table=Table(("size", "bucket", "shape", "op", "source"), tuple(
            (b["size"], b["bucket"], b["shape"], b["op_name"] or b["instruction"], b["source"] or "-")
            for b in doc["largest_buffers"]), "r")))
    if doc["fixes"]:
        sections.append(Section("Fixes, each applied and compiled (best first)", table=Table(
            ("#", "fix", "compiled", "saves", "predicted", "what"), tuple(
                (str(i), f["name"], f["label"], _saving(f["compiled_saving_bytes"]),
                 _saving(f["predicted_saving_bytes"]) if f["predicted_saving_bytes"] is not None else "-",
                 f["description"]) for i, f in enumerate(doc["fixes"], 1)), "rllrr"),
            chart=Chart("compiled saving per fix", tuple(Bar(f["name"], max(f["compiled_saving_bytes"] or 0, 0),
                                                             _saving(f["compiled_saving_bytes"]), f["fits"])
                                                         for f in doc["fixes"]))))
    if doc["topologies"]:
        smallest = doc["smallest_fitting_topology"]
        sections.append(Section("Other topologies asked", notes=(
            f"smallest that fits: {smallest}" if smallest else "none of them fits",), table=Table(
            ("topology", "devices", "verdict", "total", "limit"), tuple(
                (t["topology"], str(t["devices"]), "fits" if t["fits"] else "does not fit", format_gib(t["total_bytes"]),
                 format_gib(t["limit_bytes"])) for t in doc["topologies"]), "lrlrr")))
    sections.append(Section(notes=(f"{doc['compile_seconds']:.1f} s compiling, {doc['duration_s']:.1f} s in all",)))
    suite = Suite("tpudoctor memory preflight", "tpudoctor.memory.preflight", duration_s=doc["duration_s"],
                  properties=properties((("program", doc["program"]), ("topology", doc["topology"]),
                                         ("device_kind", doc["device_kind"]), ("limit_bytes", doc["limit_bytes"]),
                                         ("total_bytes", doc["total_bytes"]),
                                         ("smallest_fitting_topology", doc["smallest_fitting_topology"]))))
    return View("memory", title, notes, tuple(sections), (verdict,), suite)
