"""A matmul product written into the researcher's own array, in row blocks when it is large
(docs/protocol.md, "Products in row blocks").

A product over 256 MiB (or over the node's tensor limit) comes with no tensor in its job_done
("delivery": "rows"); `collect` fetches it block by block with fetch_rows and writes each block
into `out` — a numpy array, a numpy.memmap, an h5py dataset, anything with shape, dtype and slice
assignment — so no buffer here holds more than a block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np

from .errors import DTypeError, InputError, ProtocolError, ShapeError
from .mapped_pages import release_rows

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .connection import Connection
    from .streamed_tiles import TileStream

ROW_BLOCK_BYTES = 64 << 20  # what one fetch_rows asks for at most (the node's limit may be lower)


def check_out(out: Any, m: int, n: int, dtype: np.dtype[Any]) -> None:
    """Refuses, before anything is submitted, an `out` that cannot take C (m×n of `dtype`)."""
    if out is None:
        return
    shape, out_dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape is None or out_dtype is None or not hasattr(out, "__setitem__"):
        raise InputError("out is an array-like with shape, dtype and slice assignment (a numpy "
                         "array or memmap, an h5py dataset), not %s" % type(out).__name__)
    if tuple(shape) != (m, n):
        raise ShapeError("out has shape %s; C is (%d, %d)" % (tuple(shape), m, n))
    if np.dtype(out_dtype) != dtype:
        raise DTypeError("out is %s; C is %s" % (np.dtype(out_dtype), dtype))
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise InputError("out is read-only (a memmap opened with mode 'r'?)")


def single(connection: Connection, tensors: List[NDArray[Any]]) -> NDArray[Any]:
    """The one tensor of a matmul job_done."""
    if len(tensors) != 1:
        raise connection.violation("a matmul job_done carries %d tensors, not 1" % len(tensors))
    return tensors[0]


def collect(connection: Connection, job: str, summary: Dict[str, Any],
            tensors: List[NDArray[Any]], out: Any, stream: Optional[TileStream] = None) -> Any:
    """C from a matmul job_done: its tensor, the tiles streamed while it ran, or its rows fetched
    block by block; written into `out` when given (then `out` is returned)."""
    if summary.get("delivery") == "tiles":
        if stream is None:
            raise connection.violation("job_done says the tiles were streamed, but none were "
                                       "asked")
        try:
            return stream.product(out)
        except ProtocolError as exc:
            raise connection.violation(str(exc)) from None
    if tensors:
        product = single(connection, tensors)
        if out is None:
            return product
        out[0:product.shape[0]] = product
        return out
    shape, dtype = summary.get("shape"), summary.get("dtype")
    if summary.get("delivery") != "rows" or not isinstance(shape, list) or len(shape) != 2 or \
            dtype not in ("f32", "f64"):
        raise connection.violation("a matmul job_done without C must say delivery 'rows', its "
                                "shape and dtype: %r" % (summary,))
    m, n = int(shape[0]), int(shape[1])
    item = np.dtype(np.float32 if dtype == "f32" else np.float64)
    target = out if out is not None else np.empty((m, n), dtype=item)
    limit = min(ROW_BLOCK_BYTES, connection.limits["max_tensor_bytes"], connection.max_tensor_bytes)
    step = max(1, limit // (n * item.itemsize))
    for row0 in range(0, m, step):
        rows = min(step, m - row0)
        request_id = connection.send_request({"type": "fetch_rows", "job": job, "row0": row0,
                                              "rows": rows}, [])
        reply = connection.reply(request_id, "fetch_rows")
        block = connection.reply_tensors(request_id)
        if reply.get("type") != "result_rows" or reply.get("row0") != row0 or len(block) != 1 \
                or block[0].shape != (rows, n) or block[0].dtype != item:
            raise connection.violation("fetch_rows of rows %d+%d was answered with %r"
                                    % (row0, rows, reply))
        target[row0:row0 + rows] = block[0]
        release_rows(target, 0, row0 + rows)  # written pages stay in the page cache, not in us
    return target


__all__ = ["ROW_BLOCK_BYTES", "check_out", "collect", "single"]
