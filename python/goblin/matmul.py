"""The matmul kind: C = A·B submitted whole, or with A and B staged in row blocks
(staged_inputs), its product collected whole, in row blocks (product_rows) or tile by tile as
the node accepts them (streamed_tiles). Functions over a goblin.connection.Connection.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

import numpy as np

from . import lifecycle
from .errors import LimitExceededError, ProtocolError
from .estimate import Estimate
from .product_rows import check_out, collect
from .staged_inputs import check_shapes, needs_blocks, submit_staged
from .streamed_tiles import TileStream, stream_of
from .validation import check_tile, validate_matmul_inputs
from .wire import OutgoingFrame, tensor_frame_parts

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .connection import Connection

NO_STREAM: Any = object()  # submit's stream_into when no stream is asked for


def check_product(connection: Connection, m: int, n: int, itemsize: int,
                  tile: Optional[Sequence[int]]) -> None:
    """Refuses a C over this client's tensor limit, or cut into more tiles than the node takes."""
    # A and B over the node's tensor limit travel in row blocks (staged_inputs), a large C
    # too (product_rows); whole, C is at most 256 MiB, below this client's default limit.
    node_limit = connection.limits["max_tensor_bytes"]
    c_bytes = m * n * itemsize
    if c_bytes <= min(256 << 20, node_limit) and c_bytes > connection.max_tensor_bytes:
        raise LimitExceededError("C would take %d bytes, over this client's max_tensor_bytes "
                                 "of %d (see connect())" % (c_bytes, connection.max_tensor_bytes))
    if tile is not None:
        tiles = ((m + tile[0] - 1) // tile[0]) * ((n + tile[1] - 1) // tile[1])
        if tiles > connection.limits["max_tiles"]:
            raise LimitExceededError("tile %s cuts C into %d tiles, over the node's limit of %d"
                                     % (list(tile), tiles, connection.limits["max_tiles"]))


def estimate(m: int, k: int, n: int, itemsize: int, tile: Optional[Sequence[int]]) -> Estimate:
    """The size of C = A·B (m×k by k×n): A and B uploaded, 2·m·k·n FLOPs, and its tiles when
    `tile` is given (else the node plans them)."""
    tiles = None if tile is None else \
        ((m + tile[0] - 1) // tile[0]) * ((n + tile[1] - 1) // tile[1])
    return Estimate("matmul", (m * k + k * n) * itemsize, tiles, "tiles", 2.0 * m * k * n)


def submit(connection: Connection, A: Any, B: Any, tile: Optional[Sequence[int]],
           stream_into: Any = NO_STREAM, progress: bool = False) -> str:
    """Submits C = A·B and returns the job id; with `stream_into` (None or `out`) it asks for
    the accepted tiles as they come, written into the job's TileStream (its
    JobState.stream) that collect takes C from. The job's size is checked against the quota
    (and stated, with `progress`) before anything is uploaded."""
    tile = check_tile(tile)
    if needs_blocks(connection, A, B):  # staged at the node in row blocks (staged_inputs)
        m, n, dtype = check_shapes(A, B)
        check_product(connection, m, n, dtype.itemsize, tile)
        lifecycle.check_quota(connection, estimate(m, int(A.shape[1]), n, dtype.itemsize, tile),
                              progress)
        reply = submit_staged(connection, A, B, tile)
    else:
        A, B = validate_matmul_inputs(A, B)
        check_product(connection, A.shape[0], B.shape[1], A.dtype.itemsize, tile)
        lifecycle.check_quota(connection, estimate(A.shape[0], A.shape[1], B.shape[1],
                                                   A.dtype.itemsize, tile), progress)
        frames: List[OutgoingFrame] = [tensor_frame_parts(A), tensor_frame_parts(B)]
        request: Dict[str, Any] = {"type": "submit_matmul"}
        if tile is not None:
            request["tile"] = list(tile)
        if stream_into is not NO_STREAM:
            request["stream"] = True
        reply = connection.submit_request(request, frames)
    job = reply.get("job")
    if reply.get("type") != "job_accepted" or not isinstance(job, str):
        raise connection.violation("submit_matmul was answered with %s" % json.dumps(reply)[:200])
    connection.last_job = job
    state = connection.session.job(job)
    if stream_into is not NO_STREAM:
        try:
            state.stream = stream_of(reply, stream_into)
        except ProtocolError as exc:
            raise connection.violation(str(exc)) from None
    if isinstance(reply.get("tiles"), int) and state.progress is None:
        state.progress = (0, reply["tiles"])
    return job


def matmul(connection: Connection, A: NDArray[Any], B: NDArray[Any], progress: bool,
           tile: Optional[Sequence[int]], timeout: Optional[float], out: Any) -> Any:
    """See Client.matmul."""
    deadline = None if timeout is None else time.monotonic() + timeout
    if out is not None and hasattr(A, "shape") and hasattr(B, "shape") and \
            len(A.shape) == 2 and len(B.shape) == 2:
        check_out(out, A.shape[0], B.shape[1], np.dtype(getattr(A, "dtype", None)))
    job = submit(connection, A, B, tile, stream_into=out, progress=progress)
    state = connection.session.job(job)
    try:
        with lifecycle.InterruptNote(job, "fetch"):
            return lifecycle.finish(connection, job, progress, deadline,
                                    lambda summary, tensors: collect(
                                        connection, job, summary, tensors, out,
                                        state.stream if isinstance(state.stream, TileStream)
                                        else None))
    finally:
        # Not collected here (a timeout, an interrupt): a later fetch gets C whole.
        state.stream = None


def fetch(connection: Connection, job_id: str, progress: bool, timeout: Optional[float],
          out: Any) -> Any:
    """See Client.fetch."""
    return lifecycle.fetch(connection, job_id, progress, timeout,
                           lambda summary, tensors: collect(connection, job_id, summary, tensors,
                                                            out))


__all__ = ["NO_STREAM", "check_product", "estimate", "fetch", "matmul", "submit"]
