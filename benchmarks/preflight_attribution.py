"""The peak attributed from the real buffer assignment against the compiler's ``memory_analysis()``, for programs
that FIT: the ten programs of examples/preflight/programs.py with their top-ranked fix applied (the fitting variant),
and, where a generation has the HBM for it, the program as written; compiled on v4, v5e and v6e topologies.

    .venv/bin/python benchmarks/preflight_attribution.py                       # compile, print the table
    .venv/bin/python benchmarks/preflight_attribution.py --keep DIR            # ... and keep each dump in DIR
    .venv/bin/python benchmarks/preflight_attribution.py --from DIR            # the table again from kept dumps

For each compile that fits: the attributed peak (``attribute_heap_peak``: parameters, optimizer state, outputs,
constants, the buffers live at the heap's peak as activations / temporaries, their padding) against
``peak_memory_in_bytes``, and the share of it named. Needs libtpu (pip install "tpudoctor[tpu-compile]") unless
``--from``. One compile at a time.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "examples" / "preflight" / "programs.py"
GIB = 1 << 30
TOPOLOGIES = ("v4:2x2x1", "v5e:2x2", "v6e:2x2")
MESH = {"data": 2, "model": 2}
"""On 4 devices; the data axis grows where a topology has more (v4:2x2x1 has 8: two cores a chip)."""
FITTING = {
    # the top-ranked fix of benchmarks/preflight_programs.py on v5e:2x2, each recompiled there to fit
    "mlp_adam": {"width": 8192}, "transformer_block": "bf16", "conv_net": "bf16", "embedding_table": "bf16",
    "no_donation_sgd": {"width": 16384}, "f32_inference": "bf16", "long_attention": {"seq": 4096},
    "deep_scan": "bf16", "wide_activations": "bf16", "moe_experts": {"experts": 16},
}


def variants(names: list[str]) -> list[tuple[str, str, object]]:
    """(program, variant label, fix) for each program: its fitting variant and the program as written."""
    out = []
    for name in names:
        fix = FITTING[name]
        label = fix if isinstance(fix, str) else ",".join(f"{k}={v}" for k, v in fix.items())
        out.append((name, label, fix))
        out.append((name, "as written", None))
    return out


def compile_one(name: str, fix, topology: str, keep: Path | None) -> dict:
    import jax
    import jax.numpy as jnp

    from tpudoctor.preflight import compiler
    from tpudoctor.preflight.analysis import scaled_mesh
    from tpudoctor.preflight.program import abstract_args

    sys.path.insert(0, str(PROGRAMS.parent))
    import programs  # noqa: E402 - the examples folder is not a package

    devices = compiler.topology_devices(topology)
    mesh = compiler.build_mesh(devices, scaled_mesh(MESH, len(devices)))  # v4:2x2x1: 8 devices, data=4
    step, args = getattr(programs, name)(mesh, **(fix if isinstance(fix, dict) else {}))
    args = abstract_args(args, mesh)
    if fix == "bf16":
        args = tuple(jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, jnp.bfloat16, sharding=x.sharding)
                                  if x.dtype == jnp.float32 else x, a) for a in args)
    dump = None
    if keep is not None:
        dump = keep / f"{topology.replace(':', '_')}.{name}.{'as-written' if fix is None else 'fixed'}"
    result = compiler.compile_for_topology(step, args, keep_dump=str(dump) if dump else None)
    if dump is not None:
        (dump / "stats.json").write_text(json.dumps({"stats": result.stats, "fits": result.fits,
                                                     "error": result.error[:500]}))
    return {"fits": result.fits, "stats": result.stats, "plan": result.plan, "seconds": result.seconds,
            "error": result.error}


def from_dump(dump: Path) -> dict:
    from tpudoctor.captures.hlo import decode_hlo_proto

    saved = json.loads((dump / "stats.json").read_text())
    found = sorted(glob.glob(str(dump / "*.after_optimizations.hlo.pb")), key=os.path.getsize)
    plan = decode_hlo_proto(Path(found[-1]).read_bytes()) if found else None
    return {"fits": saved["fits"], "stats": saved["stats"], "plan": plan, "seconds": 0.0, "error": saved["error"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="programs (default: all ten)")
    parser.add_argument("--topology", action="append", help="topologies (default: v4:2x2x1, v5e:2x2, v6e:2x2)")
    parser.add_argument("--keep", default=None, help="keep each compile's dump here")
    parser.add_argument("--from", dest="source", default=None, help="read the dumps kept here; compile nothing")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)

    from tpudoctor.memory.attribution import attribute_heap_peak

    if args.source is None:
        from tpudoctor.preflight.compiler import compiler_missing, prepare_environment

        missing = compiler_missing()
        if missing:
            print(f"SKIP {missing}")
            return 0
        prepare_environment()
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    rows = []
    for topology in args.topology or TOPOLOGIES:
        for name, label, fix in variants(args.names or list(FITTING)):
            wall = time.perf_counter()
            if args.source is not None:
                dump = Path(args.source) / f"{topology.replace(':', '_')}.{name}.{'as-written' if fix is None else 'fixed'}"
                if not dump.is_dir():
                    continue
                result = from_dump(dump)
            else:
                result = compile_one(name, fix, topology, keep)
            if not result["fits"] or result["plan"] is None:
                rows.append({"topology": topology, "program": name, "variant": label, "fits": False})
                print(f"{topology:<9} {name:<18} {label:<14} does not fit (the out-of-memory baseline: "
                      "benchmarks/preflight_programs.py)", flush=True)
                continue
            attribution = attribute_heap_peak(result["plan"])
            peak = result["stats"]["peak_memory_in_bytes"]
            row = {"topology": topology, "program": name, "variant": label, "fits": True,
                   "peak_memory_in_bytes": peak, "attributed_bytes": attribution.peak_bytes,
                   "error": attribution.peak_bytes / peak - 1, "named": attribution.named_fraction,
                   "buckets_gib": {k: round(v / GIB, 3) for k, v in attribution.buckets.items() if v},
                   "allocations_bytes": result["plan"].peak_bytes,
                   "allocations_error": result["plan"].peak_bytes / peak - 1,
                   "compile_s": round(result["seconds"], 2), "wall_s": round(time.perf_counter() - wall, 2)}
            rows.append(row)
            print(f"{topology:<9} {name:<18} {label:<14} peak {peak / GIB:7.3f} GiB | attributed "
                  f"{row['attributed_bytes'] / GIB:7.3f} ({row['error']:+.3%}), named {row['named']:.0%} | "
                  f"allocations all at once {row['allocations_error']:+.2%} | {row['buckets_gib']}", flush=True)
    fitted = [r for r in rows if r["fits"]]
    worst = max((abs(r["error"]) for r in fitted), default=0.0)
    print(f"\n{len(fitted)} compiles that fit; attributed peak vs peak_memory_in_bytes: worst {worst:.3%}; within "
          f"1 %: {sum(1 for r in fitted if abs(r['error']) <= 0.01)}/{len(fitted)}, to the byte: "
          f"{sum(1 for r in fitted if r['attributed_bytes'] == r['peak_memory_in_bytes'])}; named: "
          f"{min((r['named'] for r in fitted), default=0):.0%} at least")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
