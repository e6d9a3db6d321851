"""A researcher connection: a Sans-I/O ResearcherSession driven over a Transport.

`Connection` owns the clock: it sends what the session queued, feeds it what arrives, and waits
(every wait bounded) for replies and job news. Job kinds (matmul, graph, training) and the job
lifecycle talk to the node through its public methods; goblin.client composes it. One thread.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, TypeVar

from .estimate import Estimate
from .errors import ConnectionLostError, GoblinError, GoblinTimeoutError, ProtocolError
from .progress import ProgressBar
from .protocol.messages import close_frame, violation
from .protocol.session import ProgressReported, ResearcherSession, WaitingChanged
from .transport import Transport, TransportTimeout
from .wire import OutgoingFrame

if TYPE_CHECKING:
    from numpy.typing import NDArray

ErrorT = TypeVar("ErrorT", bound=GoblinError)


class Connection:
    """One researcher session over one transport. `timeout` bounds every reply wait."""

    def __init__(self, transport: Transport, timeout: float, max_tensor_bytes: int) -> None:
        self.transport = transport
        self.timeout = timeout
        self.session = ResearcherSession(max_tensor_bytes)
        self.broken: Optional[GoblinError] = None
        #: Progress bars drawn for jobs being waited for, by job.
        self.bars: Dict[str, ProgressBar] = {}
        #: The summary dict of the last job whose result was returned.
        self.last_summary: Optional[Dict[str, Any]] = None
        #: The id ("j-...") of the last job submitted or fetched.
        self.last_job: Optional[str] = None
        #: The size of the last job this connection submitted, stated before its upload.
        self.last_estimate: Optional[Estimate] = None

    @property
    def limits(self) -> Dict[str, int]:
        return self.session.limits

    @property
    def max_tensor_bytes(self) -> int:
        return self.session.max_tensor_bytes

    # -- the hello --------------------------------------------------------------------------------

    def handshake(self, token: Optional[str]) -> None:
        """Sends hello and waits for the welcome (its limits then hold)."""
        self.session.send_hello(token)
        self.flush()
        deadline = time.monotonic() + self.timeout
        while not self.session.welcomed:
            self.receive(deadline, "no reply in time")

    # -- sending ----------------------------------------------------------------------------------

    def flush(self) -> None:
        """Sends what the session queued."""
        self.check_open()
        for data in self.session.data_to_send():
            try:
                self.transport.send(data)
            except GoblinError as error:
                raise self.lose(error) from None

    def send(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame] = ()) -> None:
        self.check_open()
        self.session.send(message, frames)
        self.flush()

    def send_request(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame] = ()) -> int:
        """Sends a request under a new id; returns the id (reply() waits for its answer)."""
        self.check_open()
        request_id = self.session.send_request(message, frames)
        self.flush()
        return request_id

    def reply(self, request_id: int, kind: str, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Waits for the reply to `request_id` (a `kind` request); an `error` reply raises."""
        wait = self.timeout if timeout is None else timeout
        self.wait(lambda: self.session.answered(request_id), time.monotonic() + wait,
                  "no reply to %s within %.0f s" % (kind, wait))
        return self.session.take_reply(request_id)

    def request(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame] = (),
                timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends a request and returns its reply; an `error` reply raises."""
        return self.reply(self.send_request(message, frames), message["type"], timeout)

    def reply_tensors(self, request_id: int) -> List[NDArray[Any]]:
        """The tensors that came with the reply to `request_id` (result_rows' block)."""
        return self.session.reply_tensors.pop(request_id, [])

    def submit_request(self, message: Dict[str, Any],
                       frames: Sequence[OutgoingFrame]) -> Dict[str, Any]:
        """A submit_* request; a KeyboardInterrupt never leaves an orphaned job at the node.

        Interrupted while its frames are sent, the node holds half a message, never a job: the
        connection (out of step now) is closed, which drops it. Interrupted while the acceptance
        is awaited, the job may be durable already: the reply is awaited anyway and the job
        cancelled before the interrupt goes on.
        """
        try:
            request_id = self.send_request(message, frames)
        except KeyboardInterrupt:
            self.interrupted_upload(message["type"])
            raise
        try:
            return self.reply(request_id, message["type"])
        except KeyboardInterrupt:
            self.cancel_unwanted(request_id, message["type"])
            raise

    def interrupted_upload(self, kind: str) -> None:
        """After a KeyboardInterrupt while a submission's data was sent: the node holds half a
        message, never a job; closing the connection (out of step now) drops it. Says so."""
        self.lose(ConnectionLostError("interrupted while uploading %s: nothing was submitted"
                                      % kind))
        sys.stderr.write("goblin: interrupted while uploading %s: nothing was submitted (the "
                         "connection is closed; connect again to submit)\n" % kind)
        sys.stderr.flush()

    def cancel_unwanted(self, request_id: int, kind: str) -> None:
        try:
            reply = self.reply(request_id, kind)
            job = reply.get("job")
            if reply.get("type") == "job_accepted" and isinstance(job, str):
                self.cancel(job)
                sys.stderr.write("goblin: interrupted; job %s was cancelled at the node\n" % job)
        except GoblinError as error:  # refused, or the connection is gone: no job to orphan
            sys.stderr.write("goblin: interrupted while %s was answered (%s)\n" % (kind, error))

    def cancel(self, job_id: str, timeout: Optional[float] = None) -> str:
        """Cancels a job at the node; returns its state ("cancelled")."""
        reply = self.request({"type": "cancel", "job": str(job_id)}, [], timeout=timeout)
        if reply.get("type") != "cancelled" or reply.get("job") != job_id:
            raise self.violation("cancel was answered with %s" % json.dumps(reply)[:200])
        return str(reply.get("state", "cancelled"))

    # -- receiving --------------------------------------------------------------------------------

    def receive(self, deadline: Optional[float], timeout_message: str) -> None:
        """Reads one whole message (its announced tensors too) into the session."""
        while True:
            self.check_open()
            if self.session.expecting_tensors:
                # Once a message is half read, a timeout would leave the stream out of step.
                timeout: Optional[float] = max(self.timeout, 60.0)
            else:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                data = self.transport.recv(timeout)
            except TransportTimeout:
                if self.session.expecting_tensors:
                    raise self.lose(ConnectionLostError("the node stopped sending mid-message"))
                raise GoblinTimeoutError(timeout_message) from None
            except GoblinError as error:
                raise self.lose(error) from None
            try:
                self.session.receive_frame(data)
            except ProtocolError as error:  # FrameError too: the stream is out of step
                raise self.lose(error) from None
            finally:
                self.show(self.session.events_received())
            if not self.session.expecting_tensors:
                return

    def show(self, events: Sequence[object]) -> None:
        """Draws the progress of jobs being waited for."""
        for event in events:
            if isinstance(event, ProgressReported) and event.job in self.bars:
                self.bars[event.job].update(event.done, event.total)
            elif isinstance(event, WaitingChanged) and event.job in self.bars:
                self.bars[event.job].note("goblin: job %s waits: %s" % (event.job, event.why))

    def wait(self, ready: Callable[[], bool], deadline: Optional[float],
             timeout_message: str) -> None:
        """Files what arrives until ready() (GoblinTimeoutError at `deadline`; None: none)."""
        while not ready():
            if deadline is not None and time.monotonic() >= deadline:
                raise GoblinTimeoutError(timeout_message)
            self.receive(deadline, timeout_message)

    def poll(self) -> None:
        """Files whatever the node has sent already, without waiting."""
        while True:
            try:
                self.receive(time.monotonic(), "nothing pending")
            except GoblinTimeoutError:
                return

    # -- failure ----------------------------------------------------------------------------------

    def check_open(self) -> None:
        if self.broken is not None:
            raise ConnectionLostError("the connection is closed: %s" % self.broken)

    def violation(self, text: str) -> ProtocolError:
        """Closes the connection after the node broke the protocol; returns the error."""
        return self.lose(violation(text))

    def lose(self, error: ErrorT) -> ErrorT:
        """Marks the connection unusable after `error` and closes it; returns `error`."""
        if self.broken is None:
            self.broken = error
            self.transport.close(*close_frame(error))  # tells the node why, for a ProtocolError
        return error

    def close(self) -> None:
        """Closes the connection (normal closure). Jobs keep running at the node."""
        self.transport.close()
        if self.broken is None:
            self.broken = ConnectionLostError("the client is closed")


__all__ = ["Connection"]
