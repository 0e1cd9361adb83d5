"""What preparing the document costs a command (``tpudoctor.documents``): the report's ``to_dict`` and the
schema validation every renderer's input now passes once, against the whole analysis.

    .venv/bin/python benchmarks/bench_documents.py CAPTURE [CAPTURE ...]
    .venv/bin/python benchmarks/bench_documents.py /tmp/tpudoctor-bench/x50      # made by bench_profile_load.py

Prints, per capture: the analysis, ``to_dict``, the validation (profile_report and profile_diagnosis), and the
JSON document's size; the median of ``--repeat`` runs of the last three, and the first validation of the process
(which builds the validators, as a command's one validation does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("captures", nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from tpudoctor.documents import validated
    from tpudoctor.profile.pipeline import analyze

    print(f"{'capture':<48} {'analyze s':>10} {'to_dict ms':>11} {'validate ms':>12} {'first ms':>9} {'JSON KiB':>9}")
    first_ms = None
    for capture in args.captures:
        started = time.perf_counter()
        report = analyze(capture)
        analysis_s = time.perf_counter() - started
        if first_ms is None:
            t0 = time.perf_counter()
            validated(report.to_dict(), "profile_report", "profile_diagnosis")
            first_ms = (time.perf_counter() - t0) * 1e3
        to_dict_ms, validate_ms = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            document = report.to_dict()
            t1 = time.perf_counter()
            validated(document, "profile_report", "profile_diagnosis")
            t2 = time.perf_counter()
            to_dict_ms.append((t1 - t0) * 1e3)
            validate_ms.append((t2 - t1) * 1e3)
        size_kib = len(json.dumps(document, default=str)) / 1024
        print(f"{capture[-48:]:<48} {analysis_s:>10.2f} {statistics.median(to_dict_ms):>11.1f} "
              f"{statistics.median(validate_ms):>12.1f} {first_ms:>9.1f} {size_kib:>9.0f}")
        first_ms = float("nan")  # only the process's first validation builds the validators


if __name__ == "__main__":
    main()
