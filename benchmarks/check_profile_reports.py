"""The JSON report of ``tpudoctor profile analyze`` on every real capture, byte for byte, under each
profile decoder (numba's compiled one, the numpy one) and, with ``--baseline``, an older checkout.

    .venv/bin/python benchmarks/check_profile_reports.py [--baseline /path/to/old/checkout] [EXTRA.xplane.pb ...]

Captures: every ``*.xplane.pb`` in ../shared/data and its subfolders (``TPUDOCTOR_SHARED_DATA``
points elsewhere), then the extra files given. Prints one line per capture and run, and exits 1
when any report differs from the first run's. The report's own run time (its top-level
``duration_s`` line) is the one line left out of the comparison.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("TPUDOCTOR_SHARED_DATA", REPO.parent / "shared" / "data"))


def report(path: Path, decoder: str, checkout: Path) -> bytes:
    """The JSON report of one capture, from the tpudoctor of ``checkout`` with this decoder."""
    env = {**os.environ, "TPUDOCTOR_PROFILE_DECODER": decoder, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-m", "tpudoctor", "profile", "analyze", str(path), "--format", "json"],
                          capture_output=True, env=env, cwd=checkout, timeout=600)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{path.name} ({decoder}, {checkout}): exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return _RUN_TIME.sub(b"", done.stdout)


_RUN_TIME = re.compile(rb'^  "duration_s": [0-9.]+,\n', re.MULTILINE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extra", nargs="*", type=Path)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--baseline", type=Path, help="an older checkout, run with its own (numpy) decoder")
    args = parser.parse_args()
    files = sorted(args.data.glob("*.xplane.pb")) + sorted(args.data.glob("*/*.xplane.pb")) + args.extra
    runs = [("jit", REPO), ("numpy", REPO)] + ([("auto", args.baseline)] if args.baseline else [])
    differ = 0
    for path in files:
        first = None
        for decoder, checkout in runs:
            out = report(path, decoder, checkout)
            digest = hashlib.sha256(out).hexdigest()[:16]
            same = first is None or out == first
            first = out if first is None else first
            differ += not same
            where = "this checkout" if checkout == REPO else str(checkout)
            print(f"{path.name[:60]:60} {decoder:5} {where:15} {len(out):9,} bytes {digest} "
                  f"{'' if same else 'DIFFERS'}", flush=True)
    print(f"{len(files)} captures, {len(runs)} runs each: {'all identical' if not differ else f'{differ} differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
