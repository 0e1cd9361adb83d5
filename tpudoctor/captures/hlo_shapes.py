"""Array shapes and shardings of the optimised module: ``Shape`` (dtype, dims, layout tiles, the bytes it takes)
and ``Sharding`` (an ``OpSharding``), the values the buffer plan describes its buffers with."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from tpudoctor.captures.hlo_schema import ELEMENT_BITS


@dataclasses.dataclass(frozen=True)
class Shape:
    """An XLA shape: dtype (``f32``), dimensions, layout (``minor_to_major``, tiles) and tuple elements."""

    dtype: str
    dims: tuple[int, ...] = ()
    minor_to_major: tuple[int, ...] = ()
    tiles: tuple[tuple[int, ...], ...] = ()
    element_bits: int = 0
    """``layout.element_size_in_bits`` where set (sub-byte packing), else 0 (the dtype's own width)."""
    memory_space: int = 0
    tuple_shapes: tuple[Shape, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.dtype in ELEMENT_BITS

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    @property
    def bits(self) -> int:
        return self.element_bits or ELEMENT_BITS.get(self.dtype, 0)

    @property
    def logical_bytes(self) -> int:
        """Elements x element size, no padding (0 for a tuple, token or opaque value)."""
        return -(-self.elements * self.bits // 8) if self.is_array else 0

    @property
    def physical_dims(self) -> tuple[int, ...]:
        """The dimensions major to minor, as laid out in memory."""
        if len(self.minor_to_major) != len(self.dims):
            return self.dims
        return tuple(self.dims[i] for i in reversed(self.minor_to_major))

    @property
    def tiled_bytes(self) -> int:
        """Bytes the layout's tiles occupy (each minor dimension rounded up to its tile); the logical size
        where the layout has no tiles (CPU, GPU)."""
        if not self.is_array:
            return 0
        return -(-tiled_elements(self.physical_dims, self.tiles) * self.bits // 8)

    def subshape(self, index: Iterable[int]) -> Shape:
        shape = self
        for i in index:
            if not 0 <= i < len(shape.tuple_shapes):
                return shape
            shape = shape.tuple_shapes[i]
        return shape

    @property
    def text(self) -> str:
        """XLA's spelling: ``f32[64,256]{1,0:T(8,128)}``; a tuple as ``(f32[2], s32[])``."""
        if self.dtype == "tuple":
            return "(" + ", ".join(s.text for s in self.tuple_shapes) + ")"
        dims = ",".join(str(d) for d in self.dims)
        layout = ""
        if self.tiles or (self.minor_to_major and list(self.minor_to_major) != list(range(len(self.dims)))[::-1]):
            layout = "{" + ",".join(str(d) for d in self.minor_to_major)
            if self.tiles:
                layout += ":" + "".join("T(" + ",".join(str(t) for t in tile) + ")" for tile in self.tiles)
            layout += "}"
        return f"{self.dtype}[{dims}]{layout}"


def tiled_elements(dims: tuple[int, ...], tiles: tuple[tuple[int, ...], ...]) -> int:
    """Elements a major-to-minor shape occupies under XLA's tiling: the first tile applies to the minor
    dimensions (each rounded up to a whole number of tiles), each further tile to the tile before it."""
    if not tiles:
        return math.prod(dims)
    tile = tiles[0]
    dims = (1,) * max(0, len(tile) - len(dims)) + tuple(dims)
    outer, minor = dims[:len(dims) - len(tile)], dims[len(dims) - len(tile):]
    count = math.prod(outer)
    tile_dims = []
    for d, t in zip(minor, tile, strict=True):
        t = d if t <= 0 else t  # kCombineDimension (-1): the dimension is not tiled
        count *= -(-d // t) if t else 0
        tile_dims.append(t)
    return count * tiled_elements(tuple(tile_dims), tiles[1:])


@dataclasses.dataclass(frozen=True)
class Sharding:
    """An ``OpSharding``: ``replicated``, ``maximal``, ``tuple``, ``other`` (tiled) or ``manual``; for tiled, the
    tile assignment dimensions and how many devices hold each tile (``replication``)."""

    type: str
    tile_dims: tuple[int, ...] = ()
    replicate_on_last_tile_dim: bool = False
    devices: int = 0
    tuple_shardings: tuple[Sharding, ...] = ()

    @property
    def replication(self) -> int | None:
        """Devices holding a copy of each shard: the last tile dimension where it replicates, 1 for a fully
        tiled value, None for replicated (every device of the program: the caller knows how many)."""
        if self.type == "other":
            return self.tile_dims[-1] if self.replicate_on_last_tile_dim and self.tile_dims else 1
        return None if self.type == "replicated" else 1

    @property
    def shards(self) -> int:
        """Pieces the value is cut into (1 replicated)."""
        if self.type != "other" or not self.tile_dims:
            return 1
        return math.prod(self.tile_dims) // (self.replication or 1)
