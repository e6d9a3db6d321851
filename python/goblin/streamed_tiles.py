"""A matmul product that arrives tile by tile while its job runs (docs/protocol.md
"Streamed tiles"): client.matmul asks for it, and a node that grants it says "delivery": "tiles"
in job_accepted, pushes every accepted tile as a result_tile and sends a job_done without C.

The node is trusted (it verified each tile), but what it sends is still checked: every tile must
be one cell of the grid job_accepted announced, in C's dtype, and come once; the product is
handed over only when every cell arrived."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np
from numpy.typing import NDArray

from .errors import ProtocolError


class TileStream:
    """C (m×n) being filled by the tiles of a grid of tile_rows × tile_cols cells."""

    def __init__(self, accepted: Dict[str, Any], out: Any = None):
        shape, tile = _pair(accepted.get("shape")), _pair(accepted.get("tile"))
        dtype = accepted.get("dtype")
        if shape is None or tile is None or dtype not in ("f32", "f64"):
            raise ProtocolError("a streamed job_accepted needs 'shape', 'tile' and 'dtype': %r"
                                % (accepted,))
        self._m, self._n = shape
        self._tile_rows, self._tile_cols = tile
        self._dtype = np.dtype(np.float32 if dtype == "f32" else np.float64)
        # Tiles go straight into `out` when it is a numpy array of C's shape and dtype (checked
        # before the submit); otherwise into a new array copied into `out` at the end.
        self._own = not (isinstance(out, np.ndarray) and out.shape == (self._m, self._n)
                         and out.dtype == self._dtype)
        self._target: NDArray[Any] = np.empty((self._m, self._n), self._dtype) \
            if self._own else out
        self._cells = _ceil_div(self._m, self._tile_rows) * _ceil_div(self._n, self._tile_cols)
        self._seen: Set[Tuple[int, int]] = set()

    def add(self, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None:
        """Writes one result_tile into C; ProtocolError when it is not a new cell of the grid."""
        row0, col0 = message.get("row0"), message.get("col0")
        if not isinstance(row0, int) or not isinstance(col0, int) or isinstance(row0, bool) \
                or isinstance(col0, bool) or len(tensors) != 1:
            raise ProtocolError("result_tile needs integer 'row0', 'col0' and one tensor")
        tile = tensors[0]
        if row0 < 0 or col0 < 0 or row0 >= self._m or col0 >= self._n \
                or row0 % self._tile_rows or col0 % self._tile_cols:
            raise ProtocolError("result_tile at (%d, %d) is not a cell of the %d×%d grid of C"
                                % (row0, col0, self._tile_rows, self._tile_cols))
        rows = min(self._tile_rows, self._m - row0)
        cols = min(self._tile_cols, self._n - col0)
        if tile.shape != (rows, cols) or tile.dtype != self._dtype:
            raise ProtocolError("result_tile at (%d, %d) is %s %s, not (%d, %d) %s"
                                % (row0, col0, tile.shape, tile.dtype, rows, cols, self._dtype))
        if (row0, col0) in self._seen:
            raise ProtocolError("result_tile at (%d, %d) came twice" % (row0, col0))
        self._seen.add((row0, col0))
        self._target[row0:row0 + rows, col0:col0 + cols] = tile

    def product(self, out: Any = None) -> Any:
        """C once every tile came (ProtocolError otherwise): `out` when given, written into."""
        if len(self._seen) != self._cells:
            raise ProtocolError("job_done says the tiles were streamed, but %d of %d came"
                                % (len(self._seen), self._cells))
        if out is None:
            self._target.flags.writeable = False  # like a product received whole
            return self._target
        if self._own:
            out[0:self._m] = self._target
        return out


def _pair(value: Any) -> Optional[Tuple[int, int]]:
    """Two positive integers, from a JSON [a, b]; None for anything else."""
    if isinstance(value, list) and len(value) == 2 and \
            all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
        return value[0], value[1]
    return None


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def stream_of(accepted: Dict[str, Any], out: Any) -> Optional[TileStream]:
    """The stream a job_accepted grants ("delivery": "tiles"), or None."""
    return TileStream(accepted, out) if accepted.get("delivery") == "tiles" else None


__all__ = ["TileStream", "stream_of"]
