"""Handles of submitted jobs and the researcher's job list (docs/protocol.md).

`Client.submit_matmul`, `submit_graph` and `submit_train` return a `Job`: the job id (a `str`, so
it goes wherever an id went: `client.fetch(job)`, logs, files) with the `concurrent.futures` /
Dask conventions on top: `result(timeout=None)`, `done()`, `cancel()`, `progress`, `summary`.
A handle belongs to the client that made it and is used from that client's thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Protocol, Tuple

from .errors import GoblinError, JobCancelledError

if TYPE_CHECKING:
    from .connection import Connection

PENDING = object()  # a handle's outcome before result() returned


class JobOwner(Protocol):
    """What a handle needs of the client that made it (goblin.Client is one)."""

    connection: Connection

    @property
    def last_summary(self) -> Optional[Dict[str, Any]]: ...

    def fetch(self, job_id: str, progress: bool = False,
              timeout: Optional[float] = None, out: Any = None) -> Any: ...

    def fetch_outputs(self, job_id: str, progress: bool = False,
                      timeout: Optional[float] = None) -> Any: ...

    def fetch_train(self, job_id: str, *, timeout: Optional[float] = None) -> Any: ...

    def cancel(self, job_id: str, timeout: Optional[float] = None) -> str: ...


@dataclass(frozen=True)
class JobInfo:
    """One of the researcher's jobs, as `Client.jobs()` lists them."""

    id: str
    kind: str  # "matmul", "graph" or "train"
    state: str  # "running", "done", "failed", "cancelled" or "released"
    done: int  # tasks decided (rounds committed for a training job)
    total: int
    created: datetime  # when the node accepted it, timezone-aware (UTC)
    created_epoch: float  # the same, in seconds since the epoch


class Job(str):
    """A submitted job: its id, and how to wait for it, cancel it and read its progress.

    `result()` waits for the verified outputs (matmul: C; graph: the list of outputs; training:
    the TrainResult), releases the job at the node and returns them; later calls return the same
    object. A job that failed raises the node's error (JobCancelledError once cancelled).
    """

    _client: JobOwner
    _kind: str
    _outcome: Any
    _error: Optional[BaseException]
    _summary: Optional[Dict[str, Any]]

    def __new__(cls, job_id: str, client: JobOwner, kind: str) -> Job:
        self = super().__new__(cls, job_id)
        self._client = client
        self._kind = kind
        self._outcome = PENDING
        self._error = None
        self._summary = None
        return self

    @property
    def id(self) -> str:
        return str(self)

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def progress(self) -> Tuple[int, int]:
        """(done, total) as the node last reported it: tasks (graph), tiles (matmul) or rounds
        (training). Read after done() or a wait; it does not ask the node."""
        return self._client.connection.session.job(self.id).progress or (0, 0)

    @property
    def waiting(self) -> Optional[str]:
        """Why nothing computes the job now, as the node last said ("no volunteer is connected
        to compute it", …); None while it computes. Read after done() or a wait."""
        return self._client.connection.session.job(self.id).waiting

    @property
    def summary(self) -> Optional[Dict[str, Any]]:
        """The job's summary once result() returned (None before)."""
        return self._summary

    def done(self) -> bool:
        """True once the job finished, failed or was cancelled (reads what the node sent so far,
        without waiting)."""
        if self._outcome is not PENDING or self._error is not None:
            return True
        self._client.connection.poll()
        return self._client.connection.session.job(self.id).finished

    def cancelled(self) -> bool:
        """True once the node said the job was cancelled (read without waiting, like done())."""
        if isinstance(self._error, JobCancelledError):
            return True
        self._client.connection.poll()
        failed = self._client.connection.session.job(self.id).failed
        return failed is not None and failed[0] == "cancelled"

    def cancel(self) -> bool:
        """Cancels the job at the node; True when it is cancelled now (False when it had already
        finished: its result stays collectable)."""
        if self._outcome is not PENDING:
            return False
        try:
            self._client.cancel(self.id)
        except GoblinError as error:
            if getattr(error, "code", None) == "invalid_input":  # done or failed meanwhile
                return False
            raise
        return True

    def result(self, timeout: Optional[float] = None) -> Any:
        """Waits (at most `timeout` seconds; None: as long as the job runs) and returns the
        outputs. GoblinTimeoutError leaves the job running: call result() again later."""
        if self._error is not None:
            raise self._error
        if self._outcome is not PENDING:
            return self._outcome
        client = self._client
        outcome: Any
        try:
            if self._kind == "matmul":
                outcome = client.fetch(self.id, timeout=timeout)
            elif self._kind == "train":
                outcome = client.fetch_train(self.id, timeout=timeout)
            else:
                outcome = client.fetch_outputs(self.id, timeout=timeout)
        except JobCancelledError as error:
            self._error = error
            raise
        except GoblinError as failure:
            if getattr(failure, "code", None) not in (None, "timeout"):
                self._error = failure
            raise
        self._outcome = outcome
        self._summary = client.last_summary
        return outcome

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The error the job ended with (None when it succeeded); waits like result()."""
        try:
            self.result(timeout)
        except GoblinError as error:
            if getattr(error, "code", None) == "timeout":
                raise
            return error
        return None

    def __repr__(self) -> str:
        return "<goblin.Job %s (%s)>" % (self.id, self._kind)

    # Pickles (and copies) as the plain id: a client does not travel.
    def __reduce__(self) -> Tuple[Callable[..., str], Tuple[str]]:
        return (str, (self.id,))


__all__ = ["Job", "JobInfo", "JobOwner"]
