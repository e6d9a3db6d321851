"""The researcher session, Sans-I/O (the python-websockets shape): frames in, events and frames
out, no sockets, no clocks.

`ResearcherSession` numbers requests, matches replies (and `error` replies) to them, and keeps one
`JobState` per job: what the node pushed about it (progress, why it waits, its result or failure,
streamed tiles, training rounds). The transport feeds it with `receive_frame` and sends what
`data_to_send` returns; waits (and their clocks) live above it, in goblin.connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union)

from ..audit import AuditReport, parse_audit_report
from ..errors import ProtocolError, remote_error
from ..wire import OutgoingFrame
from .frames import MessageAssembler, Outgoing, encode_message
from .messages import DEFAULT_LIMITS, check_welcome, hello, violation

if TYPE_CHECKING:
    from numpy.typing import NDArray


class TileSink(Protocol):
    """Where a job's pushed result_tile messages go (goblin.streamed_tiles.TileStream)."""

    def add(self, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None: ...


@dataclass
class JobState:
    """What this session knows about one job."""

    job: str
    progress: Optional[Tuple[int, int]] = None  # (done, total) as the node last said
    waiting: Optional[str] = None  # why nothing computes the job now (progress "waiting")
    done: Optional[Tuple[Dict[str, Any], List[NDArray[Any]]]] = None  # job_done: summary, tensors
    failed: Optional[Tuple[str, str]] = None  # job_failed: code, message (the first word stands)
    stream: Optional[TileSink] = None  # a product arriving tile by tile
    rounds: List[Dict[str, Any]] = field(default_factory=list)  # train_round records
    rounds_seen: int = 0  # of those, how many fetch_train has handed out
    released: bool = False  # its result was returned: later news about it is old news
    context: Any = None  # what the job's kind keeps (training: layout, optimizer, data stream)

    @property
    def finished(self) -> bool:
        return self.done is not None or self.failed is not None


# Events: what receive_frame filed, for whoever drives the session (progress bars, observers).

@dataclass(frozen=True)
class ProgressReported:
    job: str
    done: int
    total: int


@dataclass(frozen=True)
class WaitingChanged:
    job: str
    why: str


@dataclass(frozen=True)
class TileReceived:
    job: str
    row0: int
    col0: int


@dataclass(frozen=True)
class JobFinished:
    job: str
    failed: bool


@dataclass(frozen=True)
class RoundCommitted:
    job: str
    record: Dict[str, Any]


@dataclass(frozen=True)
class ReplyReceived:
    request_id: int
    kind: str


@dataclass(frozen=True)
class AuditReported:
    report: AuditReport
    request_id: int  # 0: pushed unasked (an audit_notice)


Event = Union[ProgressReported, WaitingChanged, TileReceived, JobFinished, RoundCommitted,
              ReplyReceived, AuditReported]


class ResearcherSession:
    """One researcher connection's protocol state. Used from one thread."""

    def __init__(self, max_tensor_bytes: int) -> None:
        #: The largest tensor this client accepts from the node (connect()'s max_tensor_bytes).
        self.max_tensor_bytes = max_tensor_bytes
        #: The node's limits, from its welcome (defaults until then).
        self.limits: Dict[str, int] = dict(DEFAULT_LIMITS)
        self.next_id = 1
        self.jobs: Dict[str, JobState] = {}
        self.replies: Dict[int, Dict[str, Any]] = {}
        self.reply_tensors: Dict[int, List[NDArray[Any]]] = {}  # result_rows' block, by id
        self.errors: Dict[int, Tuple[str, str]] = {}
        self.audit_replies: Dict[int, AuditReport] = {}
        #: Reports the node pushed when an audit of one of this researcher's jobs ended, in
        #: arrival order.
        self.audit_notices: List[AuditReport] = []
        self.welcomed = False
        self._hello_id: Optional[int] = None
        self._assembler = MessageAssembler(max_tensor_bytes)
        self._outgoing: List[Outgoing] = []
        self._events: List[Event] = []

    # -- out ---------------------------------------------------------------------------------------

    def take_id(self) -> int:
        request_id = self.next_id
        self.next_id += 1
        return request_id

    def send(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame] = ()) -> None:
        """Queues `message` and its tensor frames (announced in its "tensors" when any)."""
        if frames:
            message = dict(message, tensors=len(frames))
        self._outgoing += encode_message(message, frames)

    def send_request(self, message: Dict[str, Any],
                     frames: Sequence[OutgoingFrame] = ()) -> int:
        """Queues a request under a new id and returns the id its reply will carry."""
        request_id = self.take_id()
        self.send(dict(message, id=request_id), frames)
        return request_id

    def send_hello(self, token: Optional[str]) -> int:
        self._hello_id = self.take_id()
        self.send(hello(self._hello_id, token))
        return self._hello_id

    def data_to_send(self) -> List[Outgoing]:
        """The WebSocket messages to send now, in order (each once)."""
        outgoing, self._outgoing = self._outgoing, []
        return outgoing

    # -- in ----------------------------------------------------------------------------------------

    @property
    def expecting_tensors(self) -> bool:
        """True while a message's announced tensor frames are still due."""
        return self._assembler.expecting_tensors

    def receive_frame(self, data: Union[str, bytes]) -> None:
        """Files one incoming WebSocket message. ProtocolError when the node broke the protocol
        (the connection is then unusable), the node's error for an error without an id,
        VersionMismatchError for a welcome in other versions."""
        complete = self._assembler.feed(data)
        if complete is None:
            return
        message, tensors = complete
        if not self.welcomed:
            self.limits.update(check_welcome(self._hello_id or 0, message))
            self.welcomed = True
            return
        self.file(message, tensors)

    def events_received(self) -> List[Event]:
        """What was filed since the last call, in order."""
        events, self._events = self._events, []
        return events

    def job(self, job_id: str) -> JobState:
        """The state of `job_id` (a new, empty one for a job not heard of)."""
        state = self.jobs.get(job_id)
        if state is None:
            state = self.jobs[job_id] = JobState(str(job_id))
        return state

    def answered(self, request_id: int) -> bool:
        return request_id in self.replies or request_id in self.errors

    def take_reply(self, request_id: int) -> Dict[str, Any]:
        """The reply to `request_id` (answered() first); an `error` reply raises."""
        if request_id in self.errors:
            raise remote_error(*self.errors.pop(request_id))
        return self.replies.pop(request_id)

    def audit_answered(self, request_id: int) -> bool:
        return request_id in self.audit_replies or request_id in self.errors

    def take_audit_reply(self, request_id: int) -> AuditReport:
        if request_id in self.errors:
            raise remote_error(*self.errors.pop(request_id))
        return self.audit_replies.pop(request_id)

    def release(self, job_id: str) -> None:
        """Forgets `job_id`'s result: late news of it is ignored (a fetch on the connection that
        submitted a job gets job_done twice, pushed and fetched)."""
        state = self.job(job_id)
        state.released = True
        state.done = state.failed = state.progress = None

    def file(self, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None:
        """Files one complete incoming message where the waits look for it."""
        kind = message.get("type")
        job = message.get("job")
        state = self.jobs.get(job) if isinstance(job, str) else None
        if kind in ("progress", "job_done", "job_failed", "train_round") and state is not None \
                and state.released:
            return  # late news of a job whose result this client already returned
        if kind == "result_tile":
            self._tile(job, message, tensors)
        elif kind == "train_round" and isinstance(job, str):
            if not isinstance(message.get("round"), dict):
                raise violation("train_round carries no round record")
            self.job(job).rounds.append(message["round"])
            self._events.append(RoundCommitted(job, message["round"]))
        elif kind == "progress" and isinstance(job, str):
            self._progress(self.job(job), message)
        elif kind == "job_done" and isinstance(job, str):
            self._done(self.job(job), message, tensors)
        elif kind == "audit_report":
            self._audit(message, tensors)
        elif kind == "job_failed" and isinstance(job, str):
            state = self.job(job)
            if state.failed is None:  # a cancel pushed to watchers names who did it
                state.failed = (str(message.get("code", "internal")),
                                str(message.get("message", "")))
            self._events.append(JobFinished(job, True))
        elif kind == "error":
            code, text = str(message.get("code", "internal")), str(message.get("message", ""))
            if not isinstance(message.get("id"), int):
                raise remote_error(code, text)
            self.errors[message["id"]] = (code, text)
            self._events.append(ReplyReceived(message["id"], "error"))
        elif isinstance(message.get("id"), int):
            self.replies[message["id"]] = message
            if kind == "result_rows":
                self.reply_tensors[message["id"]] = tensors
            self._events.append(ReplyReceived(message["id"], str(kind)))
        # Anything else is a message a newer node may send; this client has no use for it.

    def _tile(self, job: Any, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None:
        state = self.jobs.get(job) if isinstance(job, str) else None
        if state is None or state.stream is None:
            return  # a job given up on (timeout): fetch gets C whole
        try:
            state.stream.add(message, tensors)
        except ProtocolError as exc:
            raise violation(str(exc)) from None
        self._events.append(TileReceived(state.job, int(message["row0"]), int(message["col0"])))

    def _progress(self, state: JobState, message: Dict[str, Any]) -> None:
        done, total = message.get("done"), message.get("total")
        if isinstance(done, int) and isinstance(total, int):
            state.progress = (done, total)
            self._events.append(ProgressReported(state.job, done, total))
        waiting = message.get("waiting")
        if isinstance(waiting, str) and waiting:
            if state.waiting != waiting:
                self._events.append(WaitingChanged(state.job, waiting))
            state.waiting = waiting
        else:
            state.waiting = None

    def _done(self, state: JobState, message: Dict[str, Any],
              tensors: List[NDArray[Any]]) -> None:
        summary = message.get("summary")
        delivery = summary.get("delivery") if isinstance(summary, dict) else None
        if delivery == "tiles" and state.stream is None:
            return  # the tiles of a job given up on: a later fetch gets C whole
        if not tensors and delivery not in ("rows", "tiles"):
            raise violation("job_done carries no tensor")
        state.done = (summary if isinstance(summary, dict) else {}, tensors)
        self._events.append(JobFinished(state.job, False))

    def _audit(self, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None:
        try:
            report = parse_audit_report(message, tensors)
        except ProtocolError as exc:
            raise violation(str(exc)) from None
        if message.get("id") == 0:
            self.audit_notices.append(report)
            self._events.append(AuditReported(report, 0))
        elif isinstance(message.get("id"), int):
            self.audit_replies[message["id"]] = report
            self._events.append(AuditReported(report, message["id"]))


__all__ = ["AuditReported", "Event", "JobFinished", "JobState", "ProgressReported",
           "ReplyReceived", "ResearcherSession", "RoundCommitted", "TileReceived", "TileSink",
           "WaitingChanged"]
