"""The job lifecycle every kind shares (DESIGN: one lifecycle for every kind): wait for a job's
job_done or job_failed, collect its result, release it; fetch a job submitted earlier; list,
audit and cancel jobs. Functions over a goblin.connection.Connection.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
import time
import warnings
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Optional, Type

from .audit import AuditReport
from .estimate import Estimate
from .errors import GoblinError, JobCancelledError, JobReleasedError, RemoteError, remote_error
from .jobs import JobInfo
from .notices import NOTICE
from .progress import ProgressBar

if TYPE_CHECKING:
    from .connection import Connection

# What a job's result becomes before it is released: (summary, tensors) → result.
Collect = Callable[[Dict[str, Any], List[Any]], Any]


class InterruptNote:
    """Says, when a wait for `job` is interrupted (Ctrl-C), that the job keeps running at the
    node and how to collect it: the id is on the terminal before the interrupt goes on."""

    def __init__(self, job: str, fetch: str):
        self.job, self.fetch = job, fetch

    def __enter__(self) -> InterruptNote:
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> Literal[False]:
        if kind is KeyboardInterrupt:
            sys.stderr.write("goblin: interrupted; job %s keeps running at the node: collect it "
                             "with client.%s(%r) or stop it with client.cancel(%r)\n"
                             % (self.job, self.fetch, str(self.job), str(self.job)))
        return False


def check_quota(connection: Connection, estimate: Estimate, progress: bool) -> Dict[str, Any]:
    """States `estimate` (stderr, with the data notice, when `progress`), keeps it in
    connection.last_estimate and asks the node whether it fits the researcher's quota. Returns
    the node's quota reply (max_bytes, max_flops, max_running_jobs, running_jobs); raises LimitExceededError
    naming the limit when the job does not fit. Nothing is uploaded before this returns."""
    connection.last_estimate = estimate
    if progress:
        NOTICE.on_submit()
        sys.stderr.write("goblin: %s\n" % estimate.describe())
        sys.stderr.flush()
    message: Dict[str, Any] = {"type": "check_quota", "kind": estimate.kind,
                               "bytes": int(estimate.bytes)}
    if estimate.flops is not None:
        message["flops"] = float(estimate.flops)
    reply = connection.request(message, [])
    if reply.get("type") != "quota":
        raise connection.violation("check_quota was answered with %r" % (reply,))
    return reply



def finish(connection: Connection, job: str, progress: bool, deadline: Optional[float],
           collect_result: Optional[Collect] = None) -> Any:
    """Waits for job_done (or job_failed) of `job`, releases it and returns its tensors, or
    what `collect_result(summary, tensors)` makes of them (before the release: a failure there
    leaves the job at the node)."""
    state = connection.session.job(job)
    # Job ids name their kind (docs/protocol.md): g- graph jobs count tasks, matmul jobs tiles.
    bar = ProgressBar(job, unit="tasks" if job.startswith("g-") else "tiles") \
        if progress else None
    if bar is not None:
        connection.bars[job] = bar
        if state.progress is not None:
            bar.update(*state.progress)
    try:
        connection.wait(lambda: state.finished, deadline,
                        "job %s did not finish in time; it keeps running (fetch it later)" % job)
    finally:
        connection.bars.pop(job, None)
        if bar is not None:
            bar.finish()
    connection.last_job = job
    if state.failed is not None:
        code, message = state.failed
        state.failed = None
        raise remote_error(code, message)
    assert state.done is not None
    summary, tensors = state.done
    state.done = state.progress = None
    connection.last_summary = summary
    result = tensors if collect_result is None else collect_result(summary, tensors)
    release(connection, job)
    return result


def release(connection: Connection, job: str) -> None:
    """Releases `job` at the node; a failure only warns (its result is already here)."""
    try:
        connection.request({"type": "release", "job": job}, [])
    except GoblinError as exc:
        warnings.warn("releasing job %s failed: %s" % (job, exc), RuntimeWarning)
    connection.session.release(job)


def fetch(connection: Connection, job_id: str, progress: bool, timeout: Optional[float],
          collect_result: Optional[Collect] = None) -> Any:
    """Attaches to a job (also one submitted on another connection) and finish()es it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    connection.last_job = job_id
    state = connection.session.job(job_id)
    state.released = False
    if not state.finished:
        try:
            status = connection.request({"type": "fetch", "job": job_id}, [])
        except RemoteError as error:
            if error.code == "not_found" and " was released" in str(error):
                raise JobReleasedError(str(error).split(": ", 1)[-1]) from None
            raise
        if status.get("type") != "job_status":
            raise connection.violation("fetch was answered with %s" % json.dumps(status)[:200])
        status_state = status.get("state")
        if status_state == "released":
            raise JobReleasedError("job %s was released: its result was delivered and its data "
                                   "deleted at the node" % job_id)
        if status_state == "cancelled":  # its job_failed follows; nothing more will come
            # (A training job's rounds follow instead: fetch_train delivers them.)
            connection.wait(lambda: state.finished, time.monotonic() + connection.timeout,
                            "no job_failed after job %s's cancelled status" % job_id)
            state.done = None
            code, message = state.failed or ("cancelled", "job %s was cancelled" % job_id)
            state.failed = None
            state.released = True  # a second job_failed may follow: old news
            raise JobCancelledError(code, message)
        if status_state == "failed" and state.done is None:
            code, message = state.failed or (status.get("code", "internal"),
                                             status.get("message", "job failed"))
            raise remote_error(code, message)
        if isinstance(status.get("done"), int) and isinstance(status.get("total"), int) \
                and state.progress is None:
            state.progress = (status["done"], status["total"])
    return finish(connection, job_id, progress, deadline, collect_result)


def list_jobs(connection: Connection, timeout: Optional[float] = None) -> List[JobInfo]:
    """This researcher's jobs at the node, newest first."""
    reply = connection.request({"type": "list_jobs"}, [], timeout=timeout)
    listed = reply.get("jobs")
    if reply.get("type") != "job_list" or not isinstance(listed, list):
        raise connection.violation("list_jobs was answered with %s" % json.dumps(reply)[:200])
    try:
        return [JobInfo(str(entry["job"]), str(entry["kind"]), str(entry["state"]),
                        int(entry["done"]), int(entry["total"]),
                        datetime.fromtimestamp(float(entry["created"]), timezone.utc),
                        float(entry["created"]))
                for entry in listed]
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        raise connection.violation("a job_list entry lacks a field") from None


def audit(connection: Connection, job_id: str, timeout: Optional[float] = None) -> AuditReport:
    """What audits after delivery found about a job (see Client.audit)."""
    request_id = connection.session.take_id()
    connection.send({"type": "audit", "id": request_id, "job": job_id}, [])
    wait = connection.timeout if timeout is None else timeout
    connection.wait(lambda: connection.session.audit_answered(request_id),
                    time.monotonic() + wait, "no reply to audit within %.0f s" % wait)
    return connection.session.take_audit_reply(request_id)


__all__ = ["Collect", "InterruptNote", "audit", "check_quota", "fetch", "finish", "list_jobs", "release"]
