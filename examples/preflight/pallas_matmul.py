"""A Pallas TPU matmul kernel whose blocks do not fit in a v5e's VMEM (128 MiB) at the default block size: the
compiler says so ("Ran out of memory in memory space vmem"); the ``block`` knob at 256 fits.

    tpudoctor memory --topology v5e:2x2 --program examples/preflight/pallas_matmul.py:matmul_step
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] @ y_ref[...]


def _matmul(x, y, block, vmem_limit):
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        _kernel, out_shape=jax.ShapeDtypeStruct((m, n), x.dtype), grid=(m // block, n // block),
        in_specs=[pl.BlockSpec((block, k), lambda i, j: (i, 0)), pl.BlockSpec((k, block), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((block, block), lambda i, j: (i, j)),
        compiler_params=pltpu.CompilerParams(vmem_limit_bytes=vmem_limit))(x, y)


def matmul_step(mesh, m=4096, k=16384, n=4096, block=512, vmem_limit=100 << 20):
    """x @ y with whole-k blocks, rows over the mesh's first axis: each (block x k) f32 block is double-buffered."""
    axis = mesh.axis_names[0]
    x = jax.ShapeDtypeStruct((m, k), jnp.float32, sharding=NamedSharding(mesh, P(axis)))
    y = jax.ShapeDtypeStruct((k, n), jnp.float32, sharding=NamedSharding(mesh, P()))
    kernel = functools.partial(_matmul, block=block, vmem_limit=vmem_limit)
    # a Mosaic kernel is not partitioned by the compiler: each device runs it on its rows
    step = jax.shard_map(kernel, mesh=mesh, in_specs=(P(axis), P()), out_specs=P(axis), check_vma=False)
    return jax.jit(step), (x, y)


matmul_step.preflight_knobs = {"block": [256]}
