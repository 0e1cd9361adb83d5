"""How long steps 1 and 2 of ``tpudoctor check`` take: on this machine as it is (no TPU, no
cloud: everything should SKIP at once), and against the loopback fakes (one node, one bucket
with a few hundred objects). Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_step12.py
"""

from __future__ import annotations

import io
import os
import statistics
import tempfile
import time
from contextlib import redirect_stdout

from tpudoctor.cli import main
from tpudoctor.testing.fake_gcs import FakeGcs
from tpudoctor.testing.fake_tpu_api import FakeTpuApi, make_node
from tpudoctor.testing.loopback import free_port
from tpudoctor.tfrecord import encode_records

REPEATS = 5


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        main(argv)
    return time.perf_counter() - started


def report(label: str, samples: list[float]) -> None:
    print(f"{label:<48} median {statistics.median(samples) * 1000:8.1f} ms   max {max(samples) * 1000:8.1f} ms")


def main_bench() -> None:
    os.chdir(tempfile.mkdtemp())
    plain = ["check", "--step", "1", "--step", "2", "--format", "json"]
    report("plain machine, no target (steps 1+2)", [timed(plain) for _ in range(REPEATS)])

    with FakeTpuApi() as api, FakeGcs() as gcs:
        api.add_node(make_node("p", "us-central2-b", "my-tpu"))
        gcs.create_bucket("bucket", location="US-CENTRAL2")
        record_file = encode_records([b"x" * 1024] * 64)
        for i in range(300):
            gcs.upload("bucket", f"train/part-{i:05d}.tfrecord", record_file)
        os.environ.update(TPUDOCTOR_TPU_ENDPOINT=api.url, STORAGE_EMULATOR_HOST=gcs.url,
                          GCE_METADATA_HOST=f"127.0.0.1:{free_port()}")
        faked = ["check", "--project", "p", "--zone", "us-central2-b", "--tpu", "my-tpu",
                 "--data", "gs://bucket/train", "--step", "1", "--step", "2", "--format", "json"]
        report("loopback fakes, READY node, 300 objects", [timed(faked) for _ in range(REPEATS)])


if __name__ == "__main__":
    main_bench()
