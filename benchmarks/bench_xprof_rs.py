"""``tpudoctor profile analyze`` beside xprof-rs (a Rust reader of XSpace captures, ``pip install xprof-rs``), whole
processes side by side on the same capture, paired runs in alternating order, medians.

    .venv/bin/python benchmarks/bench_xprof_rs.py [FILE.xplane.pb] [--pairs 5]

Default FILE: the shared multi-worker GPU capture with every line's events repeated 30 times (57 MB, 693,840
events; ``make_big_capture.py``). Per pair: the tpudoctor command with the compiled decoder (``auto``; its cache
is built by one unmeasured run first), the same with the numpy decoder, and ``xprof-rs get_overview SESSION``
(xprof-rs started fresh, reading the file and answering the overview page). xprof-rs is not a dependency of
tpudoctor: where it is not installed, its column is skipped, saying so. Prints the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_profile_load import GNU_TIME, child_environment  # noqa: E402

GPU_CAPTURE = REPO.parent / "shared" / "data" / "xprof_gpu_multi_worker_34.83.195.179_6003.xplane.pb"
TPUDOCTOR = [sys.executable, "-m", "tpudoctor"]


def default_capture() -> Path:
    from benchmarks.make_big_capture import scale_capture

    target = Path(tempfile.gettempdir()) / "tpudoctor-bench" / "gpu_x30" / "gpu_x30.xplane.pb"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        scale_capture(GPU_CAPTURE, 30, target)
    return target


def xprof_rs() -> str | None:
    beside = Path(sys.executable).parent / "xprof-rs"
    return str(beside) if beside.exists() else shutil.which("xprof-rs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also run the tpudoctor of this checkout (e.g. a `git worktree add` of an older commit)")
    parser.add_argument("--no-numpy", action="store_true", help="leave out the numpy decoder's column")
    args = parser.parse_args()
    path = args.capture or default_capture()
    session = Path(tempfile.mkdtemp(prefix="xprof-rs-session-"))
    (session / path.name).symlink_to(path.resolve())
    rust = xprof_rs()
    contenders = {
        "tpudoctor (compiled decoder)": lambda: _tpudoctor(path, "auto"),
        "tpudoctor (numpy decoder)": lambda: _tpudoctor(path, "numpy"),
    }
    if args.no_numpy:
        contenders.pop("tpudoctor (numpy decoder)")
    if args.baseline:
        contenders[f"tpudoctor at {args.baseline.name}"] = lambda: _tpudoctor(path, "auto", checkout=args.baseline)
    if rust:
        contenders["xprof-rs get_overview"] = lambda: run_process([rust, "get_overview", str(session)])
    else:
        print("xprof-rs is not installed (pip install xprof-rs): its column is skipped")
    print(f"{path} ({path.stat().st_size / 1e6:.1f} MB), {args.pairs} pairs, load average before: {_load()}")
    _tpudoctor(path, "jit")  # unmeasured: builds the decoder's machine code cache where it is not yet
    for run in contenders.values():
        run()  # unmeasured: page cache, bytecode
    results: dict[str, list[dict]] = {name: [] for name in contenders}
    for index in range(args.pairs):
        for name in (list(contenders) if index % 2 == 0 else list(reversed(contenders))):
            result = contenders[name]()
            if "error" in result:
                raise SystemExit(f"{name}: {result['error']}")
            results[name].append(result)
    print(f"load average after: {_load()}")
    print(f"{'':32} {'wall s (median)':>16} {'peak RSS MB':>12} {'x xprof-rs':>11}")
    for name, runs in results.items():
        wall = statistics.median(r["process_s"] for r in runs)
        rss = statistics.median(r["process_rss_mb"] for r in runs)
        ratio = ""
        if rust and name != "xprof-rs get_overview":
            pairs = [a["process_s"] / b["process_s"] for a, b in zip(runs, results["xprof-rs get_overview"], strict=True)]
            ratio = f"{statistics.median(pairs):.2f}x"
        print(f"{name:32} {wall:16.2f} {rss:12.0f} {ratio:>11}  runs: {_seconds(runs)}")
    return 0


def run_process(argv: list[str], *, cwd: Path = REPO) -> dict:
    """A fresh process: ``process_s`` (spawn to exit), ``process_rss_mb`` (peak RSS, ``/usr/bin/time``);
    ``error`` unless it ends 0 or 1 (1: the report has findings)."""
    import subprocess
    import time

    with tempfile.NamedTemporaryFile("r", prefix="bench-rss-") as rss:
        timed = [str(GNU_TIME), "-f", "%M", "-o", rss.name] if GNU_TIME.exists() else []
        started = time.perf_counter()
        done = subprocess.run([*timed, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=900, cwd=cwd, env=_environment(cwd))
        elapsed = time.perf_counter() - started
        measured = rss.read().strip()
    if done.returncode not in (0, 1):
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:160]}
    return {"process_s": elapsed, "process_rss_mb": int(measured.splitlines()[-1]) / 1024 if measured else float("nan")}


def _environment(cwd: Path) -> dict[str, str]:
    env = child_environment()
    if cwd != REPO:  # another checkout's tpudoctor, not this one's editable install
        env["PYTHONPATH"] = str(cwd)
    return env


def _tpudoctor(path: Path, decoder: str, checkout: Path = REPO) -> dict:
    env_before = os.environ.get("TPUDOCTOR_PROFILE_DECODER")
    os.environ["TPUDOCTOR_PROFILE_DECODER"] = decoder
    try:
        return run_process([*TPUDOCTOR, "profile", "analyze", str(path), "-o", os.devnull], cwd=checkout)
    finally:
        if env_before is None:
            os.environ.pop("TPUDOCTOR_PROFILE_DECODER")
        else:
            os.environ["TPUDOCTOR_PROFILE_DECODER"] = env_before


def _seconds(runs: list[dict]) -> str:
    return ", ".join(f"{run['process_s']:.2f}" for run in runs)


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
