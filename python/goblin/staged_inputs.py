"""Matmul inputs sent in row blocks (docs/protocol.md, "Matrices in row blocks").

A or B larger than the node's tensor limit, or not an in-memory numpy array (a numpy.memmap, an
h5py dataset, any array-like with shape, dtype and row slicing), is staged at the node block by
block: `upload`, then `upload_rows` of at most 64 MiB each, read from the matrix only as it is sent,
then submit_matmul names the two uploads. No buffer here holds more than a block. A block that
cannot be read (the array-like raises) or holds NaN/Inf stops the submission; the uploads made
so far are dropped at the node, so nothing half-uploaded stays behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .errors import DTypeError, GoblinError, InputError, LimitExceededError, ShapeError
from .mapped_pages import release_rows
from .validation import MATMUL_DTYPES, check_finite
from .wire import encode_tensor_frame

if TYPE_CHECKING:
    from .connection import Connection

BLOCK_BYTES = 64 << 20  # what one upload_rows carries at most (the node's limit may be lower)


def needs_blocks(connection: Connection, A: Any, B: Any) -> bool:
    """Whether A and B go in row blocks: one is not a plain in-memory numpy array, or is over the
    node's tensor limit."""
    limit = connection.limits["max_tensor_bytes"]
    return any(type(X) is not np.ndarray or X.nbytes > limit for X in (A, B))


def check_shapes(A: Any, B: Any) -> Tuple[int, int, np.dtype[Any]]:
    """m, n and the dtype of C from A's and B's shape and dtype alone (nothing is read); the
    errors validate_matmul_inputs raises."""
    for name, X in (("A", A), ("B", B)):
        shape, dtype = getattr(X, "shape", None), getattr(X, "dtype", None)
        if shape is None or dtype is None or not hasattr(X, "__getitem__"):
            raise DTypeError("%s must be a numpy array or an array-like with shape, dtype and "
                             "slicing, got %s" % (name, type(X).__name__))
        if len(shape) != 2:
            raise ShapeError("%s must be a 2-D matrix, but has shape %s" % (name, tuple(shape)))
        if np.dtype(dtype).newbyteorder("=") not in MATMUL_DTYPES:
            raise DTypeError("%s has dtype %s; matmul takes float32 or float64" % (name, dtype))
        if 0 in tuple(shape):
            raise ShapeError("empty matrices are refused: %s has shape %s" % (name, tuple(shape)))
    if np.dtype(A.dtype).newbyteorder("=") != np.dtype(B.dtype).newbyteorder("="):
        raise DTypeError("A is %s but B is %s; both must be float32 or both float64"
                         % (A.dtype, B.dtype))
    if A.shape[1] != B.shape[0]:
        raise ShapeError("A has shape %s and B has shape %s: inner sizes %d and %d differ"
                         % (tuple(A.shape), tuple(B.shape), A.shape[1], B.shape[0]))
    return int(A.shape[0]), int(B.shape[1]), np.dtype(A.dtype).newbyteorder("=")


def begin_upload(connection: Connection, X: Any) -> str:
    dtype = np.dtype(X.dtype).newbyteorder("=")
    reply = connection.request({"type": "upload", "dtype": "f32" if dtype == np.float32 else "f64",
                             "rows": int(X.shape[0]), "cols": int(X.shape[1])}, [])
    upload = reply.get("upload")
    if reply.get("type") != "upload_ready" or not isinstance(upload, str):
        raise connection.violation("upload was answered with %r" % (reply,))
    return upload


def fill_upload(connection: Connection, name: str, X: Any, upload: str) -> None:
    rows, cols = int(X.shape[0]), int(X.shape[1])
    dtype = np.dtype(X.dtype).newbyteorder("=")
    limit = min(BLOCK_BYTES, connection.limits["max_tensor_bytes"], connection.max_tensor_bytes)
    step = max(1, limit // (cols * dtype.itemsize))
    for row0 in range(0, rows, step):
        count = min(step, rows - row0)
        block = np.ascontiguousarray(X[row0:row0 + count], dtype=dtype)
        if block.shape != (count, cols):
            raise InputError("%s[%d:%d] read as shape %s, not (%d, %d)"
                             % (name, row0, row0 + count, block.shape, count, cols))
        check_finite(name, block, "matmul", row0)
        frame = encode_tensor_frame(block)
        del block
        # A memmap's pages read so far would stay mapped here; reading a block also maps pages
        # around it (fault-around, large folios), so everything up to its end goes back.
        release_rows(X, 0, row0 + count)
        reply = connection.request({"type": "upload_rows", "upload": upload, "row0": row0},
                                [frame])
        if reply.get("type") != "rows_stored" or reply.get("rows") != row0 + count:
            raise connection.violation("upload_rows was answered with %r" % (reply,))


def submit_staged(connection: Connection, A: Any, B: Any, tile: Optional[Sequence[int]]) \
        -> Dict[str, Any]:
    """Uploads A and B in row blocks and submits C = A·B on them; returns the node's reply to
    submit_matmul. Whatever stops it on the way drops the uploads made so far."""
    limit = min(connection.limits["max_tensor_bytes"], connection.max_tensor_bytes)
    for name, X in (("A", A), ("B", B)):
        row_bytes = int(X.shape[1]) * np.dtype(X.dtype).itemsize
        if row_bytes > limit:
            raise LimitExceededError("one row of %s takes %d bytes, over the tensor limit of %d: "
                                     "it cannot travel even alone" % (name, row_bytes, limit))
    uploads: List[str] = []
    try:
        for name, X in (("A", A), ("B", B)):
            uploads.append(begin_upload(connection, X))
            fill_upload(connection, name, X, uploads[-1])
    except KeyboardInterrupt:  # the node drops a closed connection's uploads
        connection.interrupted_upload("A and B")
        raise
    except BaseException:
        drop_uploads(connection, uploads)
        raise
    request: Dict[str, Any] = {"type": "submit_matmul", "inputs": uploads}
    if tile is not None:
        request["tile"] = list(tile)
    try:  # interrupted there, submit_request cancels a job that became durable
        return connection.submit_request(request, [])
    except GoblinError:
        drop_uploads(connection, uploads)
        raise


def drop_uploads(connection: Connection, uploads: List[str]) -> None:
    """Drops uploads taken by a refused submit, or never complete."""
    for upload in uploads:
        try:
            connection.request({"type": "drop_upload", "upload": upload}, [])
        except GoblinError:
            pass


__all__ = ["BLOCK_BYTES", "check_shapes", "drop_uploads", "needs_blocks", "submit_staged"]
