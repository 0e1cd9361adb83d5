"""``tpudoctor memory --topology ... --program ...`` as text: the verdict, the peak by bucket, the largest buffers,
the fixes ranked by what the compiler says they save, and the smallest topology asked that fits."""

from __future__ import annotations

from typing import Any

from tpudoctor.reports.evidence_tables import human_bytes as format_bytes

GIB = 1 << 30


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f} GiB"


def _saving(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / GIB:.2f} GiB" if n >= 0 else f"{n / GIB:.2f} GiB (it adds)"


def render_preflight_text(doc: dict[str, Any]) -> str:
    head = f"tpudoctor memory preflight: {doc['program']} on {doc['topology']}"
    if doc.get("skipped"):
        return f"{head}\nSKIP  {doc['skipped']}\n"
    mesh = ",".join(f"{k}={v}" for k, v in doc["mesh"].items())
    lines = [head, f"  {doc['devices']} x {doc['device_kind']}, mesh {mesh}; the compiler allows "
                   f"{_gib(doc['limit_bytes'])} a chip"]
    if doc["fits"]:
        lines.append(f"PASS  fits: {_gib(doc['total_bytes'])} of {_gib(doc['limit_bytes'])}, headroom "
                     f"{_gib(doc['headroom_bytes'])} (compiled by libtpu; memory_analysis)")
    elif doc.get("memory_space") not in (None, "", "hbm"):
        lines.append(f"FAIL  does not fit in {doc['memory_space'].upper()} (the program's {_gib(doc['total_bytes'])} "
                     f"of HBM would fit); the compiler:")
        lines += [f"      {line}" for line in doc["error"].splitlines()[:12]]
    elif doc["total_bytes"] is not None:
        lines.append(f"FAIL  does not fit: needs {_gib(doc['total_bytes'])} of {_gib(doc['limit_bytes'])} "
                     f"({_gib(-(doc['headroom_bytes'] or 0))} over)")
        lines.append(f"      compiler: {doc['error'].splitlines()[0] if doc['error'] else ''}")
    else:
        lines.append(f"ERROR does not compile: {doc['error'][:500]}")
    attribution = doc.get("attribution")
    if attribution:
        lines += ["", f"Peak by bucket (the buffer assignment; {attribution['named_fraction']:.0%} named):"]
        for bucket, n in sorted(attribution["buckets_bytes"].items(), key=lambda kv: -kv[1]):
            if n:
                level = attribution["confidence"].get(bucket, {}).get("level", "")
                lines.append(f"  {bucket:<18} {format_bytes(n):>12}  {n / attribution['total_bytes']:6.1%}  {level}")
    if doc.get("largest_buffers"):
        lines += ["", "Largest buffers:"]
        for row in doc["largest_buffers"]:
            where = f"  {row['source']}" if row["source"] else ""
            lines.append(f"  {row['size']:>11}  {row['bucket']:<15} {row['shape'][:48]:<48} "
                         f"{(row['op_name'] or row['instruction'])[:60]}{where}")
    if doc.get("fixes"):
        lines += ["", "Fixes, each applied and compiled (best first):"]
        for i, fix in enumerate(doc["fixes"], 1):
            predicted = "" if fix["predicted_saving_bytes"] is None else (
                f"; predicted {_saving(fix['predicted_saving_bytes'])}")
            lines.append(f"  {i}. {fix['name']}: {fix['label']}; saves {_saving(fix['compiled_saving_bytes'])}"
                         f"{predicted}")
            lines.append(f"     {fix['description']}")
    if doc.get("topologies"):
        lines += ["", "Other topologies asked:"]
        for t in doc["topologies"]:
            verdict = "fits" if t["fits"] else "does not fit"
            lines.append(f"  {t['topology']} ({t['devices']} devices): {verdict} at {_gib(t['total_bytes'])} of "
                         f"{_gib(t['limit_bytes'])}")
        smallest = doc.get("smallest_fitting_topology")
        lines.append(f"  smallest that fits: {smallest}" if smallest else "  none of them fits")
    lines += ["", f"{doc['compile_seconds']:.1f} s compiling, {doc['duration_s']:.1f} s in all"]
    return "\n".join(lines) + "\n"
