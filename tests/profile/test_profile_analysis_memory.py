"""The analyses of one host add little memory over its loaded tables: no full-table copies.

The real v6e capture joined 20 times (serialized XSpaces concatenate into one whose planes repeat, as
``benchmarks/capture_memory.py`` builds its 1 GB capture), every chunk size of the analyses set to 2**16
rows so that its 120,260 device ops span several chunks, as the ops of a big capture do. What the map of
``profile analyze`` allocates beyond the host's device-op selection (shared by every analysis, made first
here) is bounded per device op: 71 bytes before the analyses stopped copying per-op arrays (a pandas
factorize of every op's program id, in each of four analyses, a float copy of each summed column...),
52-55 bytes after (the roofline's one summed column at a time, its group keys and metadata rows).
"""

from __future__ import annotations

import importlib
import pkgutil
import tracemalloc

import pytest
from shared_data import SHARED_DATA

V6E = SHARED_DATA / "xprof_tpu_inference_2.xplane.pb"
COPIES = 20
CHUNK = 1 << 16
MAX_BYTES_PER_DEVICE_OP = 62


@pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")
def test_the_analyses_hold_no_whole_copies_of_the_device_ops(tmp_path, monkeypatch):
    import tpudoctor.profile.analysis as analysis
    from tpudoctor.captures.capture_files import HostFile
    from tpudoctor.captures.xspace.columns import LoadOptions
    from tpudoctor.captures.xspace.lookup import RowLookup
    from tpudoctor.profile.analysis.device_op_rows import device_ops, sharing_device_ops
    from tpudoctor.profile.capture import load_host
    from tpudoctor.profile.pipeline import host_result

    joined = tmp_path / "host.xplane.pb"
    joined.write_bytes(V6E.read_bytes() * COPIES)
    for found in pkgutil.iter_modules(analysis.__path__):
        module = importlib.import_module(f"tpudoctor.profile.analysis.{found.name}")
        for name in ("CHUNK_ROWS", "FACTORIZE_ROWS", "OP_CHUNK"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, CHUNK)
    monkeypatch.setattr(RowLookup, "CHUNK", CHUNK)
    host = load_host(HostFile("host", str(joined)), LoadOptions.for_analysis())
    expected = host_result(host)  # imports and per-process caches out of the measure
    with sharing_device_ops(host):
        ops = device_ops(host)
        tracemalloc.start()
        try:
            result = host_result(host)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(ops) == 120_260 and result.summary.n_events == 534_460
    assert result.device == expected.device and result.roofline == expected.roofline  # the same figures
    assert peak / len(ops) < MAX_BYTES_PER_DEVICE_OP, (
        f"the analyses allocated {peak:,} bytes ({peak / len(ops):.0f} per device op) over the shared selection")
