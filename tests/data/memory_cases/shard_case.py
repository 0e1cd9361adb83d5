"""Known-fix case 8 (run in its own process: it needs 4 CPU devices, which JAX fixes at start).

Weights sharded over 'data' only on a (data=2, model=2) mesh, so replicated along 'model'; the fix shards them
over both axes. Prints one JSON line: memory_analysis totals before and after (argument + output + temp - alias,
one device's), the module's name and the capture of the 'before' program.

    python shard_case.py OUT_DIR
"""

import glob
import json
import os
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def forward(params, x):
    return jnp.tanh(x @ params["w"]).sum()


def total(compiled) -> int:
    m = compiled.memory_analysis()
    return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes


def main(out: str) -> None:
    mesh = jax.make_mesh((2, 2), ("data", "model"))
    x = jax.device_put(jnp.ones((64, 2048)), NamedSharding(mesh, P("data", None)))
    result = {}
    for label, spec in (("before", P("data", None)), ("after", P("data", "model"))):
        w = jax.device_put(jnp.ones((2048, 2048)), NamedSharding(mesh, spec))
        compiled = jax.jit(forward).lower({"w": w}, x).compile()
        result[label] = total(compiled)
        if label == "before":
            jax.profiler.start_trace(out)
            jax.block_until_ready(compiled({"w": w}, x))
            jax.profiler.stop_trace()
            result["module"] = compiled.as_text().split("\n")[0].split()[1].rstrip(",")
    result["xplane"] = glob.glob(f"{out}/**/*.xplane.pb", recursive=True)[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
