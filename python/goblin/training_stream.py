"""A training job's data, as arrays or streamed batch by batch (docs/protocol.md, "Streamed
training data").

Arrays (a pair x, y with a leading sample dim) travel whole with the job. An iterable of (x, y)
batches is streamed: its first batch goes with submit_train, and `BatchStream.feed` sends the next
ones as rounds commit, never more than the node holds (BATCHES_AHEAD), each answered
batch_accepted once it is durable. The iterable is read as the training goes, not to its end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Tuple

import numpy as np

from .errors import ConnectionLostError, GoblinError, GoblinTimeoutError, InputError, \
    ProtocolError
from .training_result import TrainingError
from .wire import OutgoingFrame, tensor_frame_parts

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .connection import Connection

BATCHES_AHEAD = 4  # a streamed job's batches the node holds: its running round's and the next


def numpy_of(part: Any) -> NDArray[Any]:
    return np.ascontiguousarray(part.detach().cpu().numpy() if hasattr(part, "detach")
                                else np.asarray(part))


def array_pair(data: Any) -> Optional[Tuple[NDArray[Any], NDArray[Any]]]:
    """(x, y) as numpy arrays when `data` is a pair of arrays with a leading sample dim."""
    if isinstance(data, (tuple, list)) and len(data) == 2 and all(
            hasattr(part, "shape") and len(part.shape) >= 1 for part in data):
        x, y = numpy_of(data[0]), numpy_of(data[1])
        if x.shape[0] != y.shape[0]:
            raise InputError("data has %d inputs and %d targets; they pair up by their first dim"
                             % (x.shape[0], y.shape[0]))
        return x, y
    return None


def batch_pair(item: Any, index: int, batch_size: int) -> Tuple[NDArray[Any], NDArray[Any]]:
    """Batch `index` of an iterable as (x, y), checked: a pair of arrays of batch_size samples
    (0: any)."""
    pair = array_pair(item)
    if pair is None:
        raise InputError("batch %d of the iterable is not a pair (x, y) of arrays" % index)
    if batch_size and pair[0].shape[0] != batch_size:
        raise InputError("batch %d of the iterable has %d samples, batch_size is %d (a "
                         "DataLoader's drop_last=True drops a short last batch)"
                         % (index, pair[0].shape[0], batch_size))
    return pair


class BatchStream:
    """The batches of a streamed training job still to send, from batch `next_batch` on."""

    def __init__(self, batches: Iterator[Any], next_batch: int, rounds: int, batch_size: int,
                 like: Optional[Tuple[NDArray[Any], NDArray[Any]]] = None):
        self.batches = batches
        self.next_batch = next_batch
        self.rounds = rounds
        self.batch_size = batch_size
        self.like = like  # the first batch: every later one has its dtypes and shapes
        self.ended = next_batch >= rounds

    @classmethod
    def restarted(cls, data: Any, rounds_done: int, rounds: int,
                  batch_size: int) -> BatchStream:
        """The stream of a job re-attached to: `data` from its start, the batches its committed
        rounds trained skipped (the node ignores resent batches it already holds). batch_size 0:
        the first batch's (the node checks every batch against the job's)."""
        batches = iter(data)
        start = max(rounds_done, 1)  # batch 0 came with the job
        for index in range(start):
            try:
                next(batches)
            except StopIteration:
                raise InputError("data= has %d batch(es); the job has trained %d round(s) on "
                                 "its data already" % (index, start)) from None
        return cls(batches, start, rounds, batch_size)

    def feed(self, connection: Connection, job: str, rounds_done: int) -> None:
        """Sends the batches the node has room for now (or the end of the data). A batch the
        iterable got wrong, or the node refused, cancels the job: TrainingError."""
        while not self.ended and self.next_batch < min(self.rounds, rounds_done + BATCHES_AHEAD):
            index = self.next_batch
            try:
                item = next(self.batches)
            except StopIteration:
                self._send(connection, job, {"batch": index, "end": True}, [])
                self.ended = True
                return
            try:
                x, y = batch_pair(item, index, self.batch_size)
                self._check_like(index, x, y)
                self.batch_size = self.batch_size or x.shape[0]
            except InputError as error:
                self._give_up(connection, job, str(error), "invalid_input")
            self._send(connection, job, {"batch": index},
                       [tensor_frame_parts(x), tensor_frame_parts(y)])
            self.next_batch += 1
        self.ended = self.ended or self.next_batch >= self.rounds

    def _check_like(self, index: int, x: NDArray[Any], y: NDArray[Any]) -> None:
        if self.like is None:
            self.like = (x, y)
            return
        for name, part, first in (("x", x, self.like[0]), ("y", y, self.like[1])):
            if part.dtype != first.dtype or part.shape != first.shape:
                raise InputError("%s of batch %d is %s%s; the first batch's is %s%s"
                                 % (name, index, part.dtype, list(part.shape), first.dtype,
                                    list(first.shape)))

    def _send(self, connection: Connection, job: str, fields: dict[str, Any],
              frames: list[OutgoingFrame]) -> None:
        try:
            reply = connection.request(dict({"type": "train_batch", "job": job}, **fields), frames)
        except (ConnectionLostError, GoblinTimeoutError, ProtocolError):
            raise
        except GoblinError as error:  # the node refused it
            connection.poll()
            if connection.session.job(job).finished:  # the job ended first: no more data
                self.ended = True
                return
            self._give_up(connection, job, str(error), getattr(error, "code", None))
        if reply.get("type") != "batch_accepted" or reply.get("batch") != fields["batch"]:
            raise connection.violation("train_batch was answered with %r" % (reply,))

    def _give_up(self, connection: Connection, job: str, why: str, code: Optional[str]) -> None:
        self.ended = True
        try:
            connection.cancel(job)
            fate = "was cancelled; client.fetch_train(%r, model) returns its committed rounds" % job
        except (ConnectionLostError, GoblinTimeoutError, ProtocolError):
            raise
        except GoblinError as error:
            fate = "could not be cancelled (%s)" % error
        raise TrainingError("%s; training job %s %s" % (why, job, fate), None, job, code=code)


__all__ = ["BATCHES_AHEAD", "BatchStream", "array_pair", "batch_pair", "numpy_of"]
