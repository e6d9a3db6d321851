"""Synchronous researcher client for a GPU Goblin lab node (docs/protocol.md, /v1/researcher).

One Client owns one WebSocket connection and is used from one thread at a time. Every wait is
bounded: replies by the connect() timeout, jobs by the timeout given to matmul()/fetch().
"""

from __future__ import annotations

import inspect
import json
import os
import ssl
import sys
import time
import warnings
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Literal, Optional, Sequence, Set,
                    Tuple, Type, TypeVar, Union)

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import connect as _ws_connect

from .audit import AuditReport, parse_audit_report
from .errors import (AuthenticationError, CertificateError, ConnectionLostError, FrameError,
                     GoblinError, JobCancelledError,
                     GoblinTimeoutError, InputError, LimitExceededError, ProtocolError,
                     RemoteError,
                     VersionMismatchError, remote_error)
from .product_rows import check_out, collect
from .staged_inputs import check_shapes, needs_blocks, submit_staged
from .streamed_tiles import TileStream, stream_of
from .progress import ProgressBar
from .graph_job import graph_request
from .jobs import Job, JobInfo
from .validation import check_tile, validate_matmul_inputs
from .wire import (DEFAULT_MAX_TENSOR_BYTES, OutgoingFrame, decode_tensor_frame,
                   tensor_frame_parts)

import numpy as np

if TYPE_CHECKING:
    import torch
    from numpy.typing import NDArray
    from websockets.sync.client import ClientConnection

    from .graph_job import BatchSpec, GraphLike
    from .optim import Optimizer
    from .training_result import RoundRecord, TrainResult

PROTOCOL_VERSION = 6  # 2 added audit and audit_report, 3 submit_train and train_round, 4 cancel
# and list_jobs, 5 train_batch and batch_accepted (streamed training data), 6 result_tile (a
# product's accepted tiles pushed while its job runs)
CATALOG_VERSION = 3  # 1: matmul tiles; 3: op graphs as well (docs/ops.md)
RESEARCHER_PATH = "/v1/researcher"
_NO_STREAM: Any = object()  # _submit's stream_into when no stream is asked for
# Room for the frame header and padding on top of the largest tensor.
FRAME_OVERHEAD_BYTES = 64 * 1024
MAX_TENSORS_PER_MESSAGE = 64
# What a job's result becomes before it is released: (summary, tensors) → result.
_Collect = Callable[[Dict[str, Any], List[Any]], Any]

DEFAULT_LIMITS = {"max_control_bytes": 65536, "max_tensor_bytes": DEFAULT_MAX_TENSOR_BYTES,
                  "max_tiles": 1000000, "max_authenticated_control_bytes": 4 << 20,
                  "max_tensors_per_message": MAX_TENSORS_PER_MESSAGE}

Message = Tuple[Dict[str, Any], List["NDArray[Any]"]]
_Error = TypeVar("_Error", bound=GoblinError)

DATA_WARNING = ("Numbers are not encrypted while volunteers compute them: personal or medical data "
                "does not belong on the public network.")


def _researcher_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith(RESEARCHER_PATH) else url + RESEARCHER_PATH


def _closed_error(exc: ConnectionClosed) -> GoblinError:
    """The exception for a closed connection, from the close frame the node sent (if any)."""
    received = getattr(exc, "rcvd", None)
    if received is None:
        return ConnectionLostError("the connection to the node was lost without a close frame")
    code, reason = received.code, received.reason
    if code == 4001:
        return AuthenticationError("the node refused the access token (%s)" % reason)
    if code == 4002:
        return VersionMismatchError("the node does not speak protocol %d / catalog %d (%s)"
                                    % (PROTOCOL_VERSION, CATALOG_VERSION, reason))
    return ConnectionLostError("the node closed the connection with code %d: %s" % (code, reason),
                               close_code=code, reason=reason)


def _tls_context(ca_file: Optional[str]) -> ssl.SSLContext:
    """Verifies the node's certificate and host name: against `ca_file` (PEM) alone when given,
    else against the system's trust store. TLS 1.2 at least."""
    try:
        context = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise InputError("cannot load the CA file %r: %s" % (ca_file, exc)) from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class _interrupt_note:
    """Says, when a wait for `job` is interrupted (Ctrl-C), that the job keeps running at the
    node and how to collect it: the id is on the terminal before the interrupt goes on."""

    def __init__(self, job: str, fetch: str):
        self._job, self._fetch = job, fetch

    def __enter__(self) -> _interrupt_note:
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> Literal[False]:
        if kind is KeyboardInterrupt:
            sys.stderr.write("goblin: interrupted; job %s keeps running at the node: collect it "
                             "with client.%s(%r) or stop it with client.cancel(%r)\n"
                             % (self._job, self._fetch, str(self._job), str(self._job)))
        return False


def connect(url: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0,
            max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES,
            ca_file: Optional[str] = None) -> Client:
    """Opens a researcher connection to the lab node at `url` ("ws://HOST:PORT", or
    "wss://HOST:PORT" for TLS).

    `url` defaults to the GOBLIN_NODE environment variable, `token` to GOBLIN_TOKEN and `ca_file`
    to GOBLIN_CA_FILE. `token` is the access token lab staff gave you (surrounding whitespace is
    ignored, so the text of a token file can be passed as is). A wss:// node's certificate must
    chain to `ca_file` (PEM) or, without one, to the system's trust store, and name the URL's
    host. `timeout` bounds the handshake and every reply wait. `max_tensor_bytes` is the largest
    tensor this client accepts from the node.
    Raises InputError (no URL, not a ws:// or wss:// one, an unreadable CA file, a `ca_file` for
    a ws:// URL), CertificateError (the node's certificate was not trusted), AuthenticationError,
    VersionMismatchError or ConnectionLostError — every failure is a GoblinError.
    """
    url = url if url is not None else os.environ.get("GOBLIN_NODE")
    token = token if token is not None else os.environ.get("GOBLIN_TOKEN")
    if not url:
        raise InputError("no lab node URL: pass one to connect() or set GOBLIN_NODE")
    if not isinstance(url, str) or not url.startswith(("ws://", "wss://")):
        raise InputError("the lab node URL must start with ws:// or wss://, got %r" % (url,))
    options: Dict[str, Any] = {"compression": None, "open_timeout": timeout,
                               "close_timeout": min(timeout, 5.0),
                               "max_size": max_tensor_bytes + FRAME_OVERHEAD_BYTES}
    if url.startswith("wss://"):
        options["ssl"] = _tls_context(ca_file if ca_file is not None
                                      else os.environ.get("GOBLIN_CA_FILE"))
    elif ca_file is not None:
        raise InputError("ca_file is for wss:// lab nodes, got the URL %r" % (url,))
    accepted = inspect.signature(_ws_connect).parameters
    if "proxy" in accepted:
        options["proxy"] = None  # websockets >= 15 would otherwise honour *_PROXY variables
    if "legacy" in accepted:
        options["legacy"] = True  # websockets >= 17: a plain connection, not a context manager
    target = _researcher_url(url)
    try:
        connection = _ws_connect(target, **options)
    except ssl.SSLCertVerificationError as exc:  # before ValueError, which it also is
        raise CertificateError("the node's TLS certificate was refused at %s: %s (pass the lab's "
                               "CA certificate as ca_file or GOBLIN_CA_FILE)"
                               % (target, exc.verify_message or exc)) from exc
    except ssl.SSLError as exc:
        raise ConnectionLostError("TLS handshake with %s failed: %s (does the node serve TLS on "
                                  "that port?)" % (target, exc)) from exc
    except (InvalidURI, ValueError) as exc:  # ValueError: urllib's, e.g. an unclosed "[::1"
        raise InputError("%r is not a lab node URL: %s" % (url, exc)) from exc
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        # A node that speaks the other transport drops the connection without an answer.
        hint = ""
        if isinstance(exc, (InvalidHandshake, ConnectionResetError)):
            hint = (" (does the node serve TLS on that port?)" if url.startswith("wss://")
                    else " (a node that serves TLS needs a wss:// URL)")
        raise ConnectionLostError("cannot connect to %s: %s%s" % (target, exc, hint)) from exc
    client = Client(connection, timeout=timeout, max_tensor_bytes=max_tensor_bytes)
    try:
        client._handshake(token)
    except BaseException:
        client.close()
        raise
    return client


class Client:
    """A researcher session with one lab node. Create it with goblin.connect()."""

    def __init__(self, connection: ClientConnection, timeout: float,
                 max_tensor_bytes: int) -> None:
        self._ws = connection
        self._timeout = timeout
        self._max_tensor_bytes = max_tensor_bytes
        self._next_id = 1
        self._broken: Optional[GoblinError] = None
        self._replies: Dict[int, Dict[str, Any]] = {}
        self._reply_tensors: Dict[int, List[NDArray[Any]]] = {}  # result_rows' block, by id
        self._errors: Dict[int, Tuple[str, str]] = {}
        self._progress: Dict[str, Tuple[int, int]] = {}
        self._waiting: Dict[str, str] = {}  # why nothing computes a job now (progress "waiting")
        self._done: Dict[str, Tuple[Dict[str, Any], List[NDArray[Any]]]] = {}
        self._streams: Dict[str, TileStream] = {}  # products arriving tile by tile, by job
        self._failed: Dict[str, Tuple[str, str]] = {}
        self._bars: Dict[str, ProgressBar] = {}
        self._released: Set[str] = set()
        self._audit_replies: Dict[int, AuditReport] = {}
        self._train_rounds: Dict[str, List[Dict[str, Any]]] = {}  # train_round records per job
        self._train_seen: Dict[str, int] = {}  # of those, how many fetch_train has handed out
        self._training: Dict[str, Any] = {}  # a training job's layout, optimizer, batch size, stream
        #: Reports the node pushed when an audit of one of this researcher's jobs ended (a
        #: volunteer whose results the job used was caught later), in arrival order. They arrive
        #: while this client waits for something; audit(job_id) asks at any time.
        self.audit_notices: List[AuditReport] = []
        self.limits: Dict[str, int] = dict(DEFAULT_LIMITS)
        #: The summary dict of the last job whose result this client returned.
        self.last_summary: Optional[Dict[str, Any]] = None
        #: The id ("j-...") of the last job this client submitted or fetched.
        self.last_job: Optional[str] = None

    # -- public API -------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection (normal closure). Jobs keep running at the node."""
        try:
            self._ws.close()
        except Exception:  # closing a dead connection must not raise
            pass
        if self._broken is None:
            self._broken = ConnectionLostError("the client is closed")

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def matmul(self, A: NDArray[Any], B: NDArray[Any], progress: bool = False,
               tile: Optional[Sequence[int]] = None,
               timeout: Optional[float] = None, out: Any = None) -> Any:
        """C = A @ B computed by volunteers and verified by the lab node.

        WARNING: numbers are not encrypted while volunteers compute them. Personal or medical
        data does not belong on the public network.

        A (m×k) and B (k×n) must be numpy arrays, both float32 or both float64, with finite values
        and no zero dimension; they are checked here before anything is uploaded (DTypeError,
        ShapeError, InputError, LimitExceededError). Non-contiguous arrays are copied to C order.
        `tile` = [rows, cols] sets the size of the C tiles handed to volunteers (node default when
        None). `progress=True` draws a progress bar on stderr. `timeout` bounds the whole job in
        seconds (None: wait as long as the job runs); on timeout GoblinTimeoutError is raised and
        the job keeps running (see last_job and fetch()).

        Returns C (m×n, same dtype), a read-only array viewing the received bytes (use .copy()
        for a writable one), or `out` with C written into it: a numpy array or numpy.memmap, an
        h5py dataset, anything with that shape and dtype and slice assignment (checked before
        anything is submitted). A product over 256 MiB (or the node's tensor limit) comes in row
        blocks of at most 64 MiB, each written into `out` as it arrives: C can be larger than
        this machine's memory when `out` is a memmap. Tiles of at least 1 MiB come as each is
        accepted, while the rest compute (protocol 6, summary "delivery": "tiles"), written into
        C, or straight into `out` when it is a numpy array (which then holds some tiles when
        the job fails). The job's summary is kept in
        `last_summary`; the job is released at the node once C is here (not when writing into
        `out` failed: fetch(job, out=...) again). Raises RemoteError when the node refuses the
        job or it fails, ConnectionLostError when the connection drops.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        if out is not None and hasattr(A, "shape") and hasattr(B, "shape") and \
                len(A.shape) == 2 and len(B.shape) == 2:
            check_out(out, A.shape[0], B.shape[1], np.dtype(getattr(A, "dtype", None)))
        job = self._submit(A, B, tile, stream_into=out)
        try:
            with _interrupt_note(job, "fetch"):
                return self._finish(job, progress, deadline,
                                    lambda summary, tensors: collect(self, job, summary, tensors,
                                                                     out, self._streams.get(job)))
        finally:
            # Not collected here (a timeout, an interrupt): a later fetch gets C whole.
            self._streams.pop(job, None)

    def run(self, graph: GraphLike, inputs: Sequence[NDArray[Any]],
            batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
            progress: bool = False, timeout: Optional[float] = None,
            micro_batch: Optional[int] = None,
            verification: str = "replicas") -> List[NDArray[Any]]:
        """Runs an op graph on the network and returns its outputs (numpy arrays, graph order).

        WARNING: numbers are not encrypted while volunteers compute them.

        `graph` is a goblin.graph.Graph, a goblin.capture() result or a graph dict in the wire
        form; `inputs` are numpy arrays in the graph's input order, each with exactly the declared
        dtype and shape (DTypeError, ShapeError otherwise). With `verification="replicas"` (the
        default) every task is computed by two volunteers whose results must agree bit for bit;
        the node settles disagreements and audits a sample itself, and the outputs are the
        catalog's canonical bits. With `verification="freivalds"` one volunteer computes each
        task, its large f32/f64 matmuls (inner size ≥ 64) through BLAS, and the node checks every
        task itself: each such matmul by Freivalds (every element within 2× its own rounding
        bound), every other value recomputed bit for bit — about twice the throughput, outputs
        within float rounding of the canonical ones rather than equal to them.
        `batch` lets the node split the job: an int splits every input and every output along
        that dim; a dict {"inputs": [dim or None, ...], "outputs": [dim, ...]} says it per value.
        Marking a batch dim asserts that its rows are computed independently. `chunks` asks for
        that many tasks (node default: one per connected volunteer). An output entry "sum" or
        "mean" (for outputs without a batch dim, such as a mean loss and its gradients) adds the
        chunks' outputs, or averages them weighted by their rows, in float64 in chunk order.
        `micro_batch=m` says the graph is written for m rows (captured at that batch size): the
        marked inputs may carry any multiple of m rows and every task runs the graph unchanged on
        m of them. The summary of the job is in `last_summary`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        job = self.submit_graph(graph, inputs, batch=batch, chunks=chunks, micro_batch=micro_batch,
                                verification=verification)
        with _interrupt_note(job, "fetch_outputs"):
            return self._finish(job, progress, deadline)

    def submit_graph(self, graph: GraphLike, inputs: Sequence[NDArray[Any]],
                     batch: Optional[BatchSpec] = None,
                     chunks: Optional[int] = None, micro_batch: Optional[int] = None,
                     verification: str = "replicas") -> Job:
        """Submits a graph job (see run()) and returns its handle (a goblin.Job, which is also its
        id): collect it with job.result() or fetch_outputs(job), cancel it with job.cancel()."""
        request, arrays = graph_request(graph, inputs, batch, chunks,
                                        max_tensors=self.limits["max_tensors_per_message"],
                                        max_tensor_bytes=self.limits["max_tensor_bytes"],
                                        micro_batch=micro_batch, verification=verification)
        for index, array in enumerate(arrays):
            if array.nbytes > self.limits["max_tensor_bytes"]:
                raise LimitExceededError("input %d takes %d bytes, over the node's tensor limit of "
                                         "%d" % (index, array.nbytes, self.limits["max_tensor_bytes"]))
        if len(arrays) > self.limits["max_tensors_per_message"]:
            raise LimitExceededError("the graph has %d inputs (large constants count as inputs), "
                                     "over the node's limit of %d"
                                     % (len(arrays), self.limits["max_tensors_per_message"]))
        size = len(json.dumps(request, separators=(",", ":")))
        if size > self.limits["max_authenticated_control_bytes"]:
            raise LimitExceededError("the graph's JSON takes %d bytes, over the node's limit of %d"
                                     % (size, self.limits["max_authenticated_control_bytes"]))
        reply = self._submit_request(request, [tensor_frame_parts(a) for a in arrays])
        job = reply.get("job")
        if reply.get("type") != "job_accepted" or not isinstance(job, str):
            raise self._violation("submit_graph was answered with %s" % json.dumps(reply)[:200])
        self.last_job = job
        if isinstance(reply.get("tasks"), int):
            self._progress.setdefault(job, (0, reply["tasks"]))
        return Job(job, self, "graph")

    def train(self, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
              optimizer: Optional[Optimizer] = None, rounds: Optional[int] = None,
              batch_size: int = 32, micro_batch: Optional[int] = None,
              clip_grad_norm: Optional[float] = None,
              callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = True,
              resume: Optional[TrainResult] = None, timeout: Optional[float] = None,
              dropout_seed: int = 0, verification: str = "replicas") -> TrainResult:
        """Trains a PyTorch model on the network and returns a goblin.TrainResult.

        WARNING: numbers are not encrypted while volunteers compute them.

        `model(x)` and `loss_fn(model(x), y)` (a loss averaged over the batch, PyTorch's default
        reduction) are captured once as a training step (params, x, y) → (loss, grads) at
        `micro_batch` rows. `data` is a pair (x, y) of arrays with a leading sample dim, uploaded
        once (round r takes samples r·B … r·B+B-1, wrapping around), or an iterable of (x, y)
        batches of `batch_size` samples (a DataLoader with drop_last=True, a generator), streamed:
        round k trains batch k, which is read and sent as the rounds before it commit (the node
        holds at most 4 batches); `rounds` defaults to its len(), and an iterable that ends
        sooner ends the training there. The lab node holds the parameters and the optimizer state and runs the rounds:
        each round's `batch_size / micro_batch` micro-batches are graph tasks verified like any
        (two volunteers, bitwise agreement, node audits), the losses and gradients are averaged
        in float64 in micro-batch order, clipped to `clip_grad_norm` (clip_grad_norm_'s formula),
        and `optimizer` (goblin.optim.SGD, Adam or AdamW; default AdamW()) takes its step at the
        node; the round commits before the next starts. `callback(record)` gets each round's
        RoundRecord as it commits. The model passed in is not modified: the result's
        `state_dict` holds the trained parameters, `history` the rounds; `resume=result` trains
        `rounds` more from it (parameters, optimizer state, position in the data). A failed job
        (a non-finite loss or gradient: nothing applied) or a lost connection raises
        goblin.TrainingError: its `result` holds the committed rounds, its `job` is the training
        job, which a killed node resumes on restart and fetch_train() re-attaches to.

        Dropout (F.dropout / nn.Dropout in training mode) draws the catalog's counter-based
        dropout_mask, not PyTorch's generator: round r uses seed `dropout_seed` + r, and each
        micro-batch its own stream, so replicas agree bit for bit (docs/training.md, "Dropout").

        `verification="freivalds"` verifies each micro-batch as run() does with it: one volunteer,
        its large matmuls and convolutions through BLAS, every task checked by the node. Faster;
        the trained parameters are then within float rounding of a "replicas" run, not equal to
        it, and a round recomputed after a crash may differ from the first attempt in its last
        bits (still verified).
        """
        from .training import train
        if progress:
            sys.stderr.write("goblin: " + DATA_WARNING + "\n")
        return train(self, model, loss_fn, data, optimizer=optimizer, rounds=rounds,
                     batch_size=batch_size, micro_batch=micro_batch, clip_grad_norm=clip_grad_norm,
                     callback=callback, progress=progress, resume=resume, timeout=timeout,
                     dropout_seed=dropout_seed, verification=verification)

    def submit_train(self, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
                     optimizer: Optional[Optimizer] = None, rounds: Optional[int] = None,
                     batch_size: int = 32, micro_batch: Optional[int] = None,
                     clip_grad_norm: Optional[float] = None, resume: Optional[TrainResult] = None,
                     dropout_seed: int = 0, verification: str = "replicas") -> Job:
        """Submits a training job (see train()) and returns its handle (a goblin.Job, also its
        id) once it is durable at the node; follow it with job.result() or fetch_train(), on
        this connection or a later one."""
        from .training import submit_train
        job = submit_train(self, model, loss_fn, data, optimizer=optimizer, rounds=rounds,
                           batch_size=batch_size, micro_batch=micro_batch,
                           clip_grad_norm=clip_grad_norm, resume=resume,
                           dropout_seed=dropout_seed, verification=verification)
        return Job(job, self, "train")

    def fetch_train(self, job_id: str, model: Optional[torch.nn.Module] = None,
                    optimizer: Optional[Optimizer] = None, batch_size: Optional[int] = None,
                    callback: Optional[Callable[[RoundRecord], Any]] = None,
                    progress: bool = False, timeout: Optional[float] = None,
                    data: Any = None) -> TrainResult:
        """Waits for a training job (also one submitted before a client or node restart), then
        releases it and returns its TrainResult. A job submitted on another connection needs the
        `model` (its parameter names and shapes), and the `optimizer` and `batch_size` it was
        submitted with if the result is to be resumed from. A job whose data was streamed from
        a connection that is gone needs `data`: the same iterable of batches from its start (the
        batches of committed rounds are skipped, the rest sent as the training goes)."""
        from .training import fetch_train
        return fetch_train(self, job_id, model=model, optimizer=optimizer,
                           batch_size=batch_size, callback=callback, progress=progress,
                           timeout=timeout, data=data)

    def fetch_outputs(self, job_id: str, progress: bool = False,
                      timeout: Optional[float] = None) -> List[NDArray[Any]]:
        """Like fetch(), for a graph job: returns the list of its outputs."""
        return self._fetch(job_id, progress, timeout)

    def submit_matmul(self, A: NDArray[Any], B: NDArray[Any],
                      tile: Optional[Sequence[int]] = None) -> Job:
        """Submits C = A @ B and returns the job's handle once the job is durable at the node.

        Same checks and data warning as matmul(). The handle (a goblin.Job) is also the job id:
        collect the result with job.result() or fetch(job), on this connection or on a later
        one (e.g. after the node restarted); job.cancel() stops it.
        """
        return Job(self._submit(A, B, tile), self, "matmul")

    def cancel(self, job_id: str, timeout: Optional[float] = None) -> str:
        """Cancels one of this researcher's jobs at the node and returns its state
        ("cancelled"). Its queued tasks and leases are dropped and its data deleted; a training
        job keeps the rounds it committed (fetch_train delivers them). Waiting for it then
        raises JobCancelledError (TrainingError with code "cancelled" for training). A job that
        already finished raises InputError; an unknown one, or another researcher's, RemoteError
        with code not_found."""
        reply = self._request({"type": "cancel", "job": str(job_id)}, [], timeout=timeout)
        if reply.get("type") != "cancelled" or reply.get("job") != job_id:
            raise self._violation("cancel was answered with %s" % json.dumps(reply)[:200])
        return str(reply.get("state", "cancelled"))

    def jobs(self, timeout: Optional[float] = None) -> List[JobInfo]:
        """This researcher's jobs at the node, newest first (at most 1000): goblin.JobInfo with
        id, kind, state, done, total and created. Never another researcher's."""
        reply = self._request({"type": "list_jobs"}, [], timeout=timeout)
        listed = reply.get("jobs")
        if reply.get("type") != "job_list" or not isinstance(listed, list):
            raise self._violation("list_jobs was answered with %s" % json.dumps(reply)[:200])
        try:
            return [JobInfo(str(entry["job"]), str(entry["kind"]), str(entry["state"]),
                            int(entry["done"]), int(entry["total"]), float(entry["created"]))
                    for entry in listed]
        except (KeyError, TypeError, ValueError):
            raise self._violation("a job_list entry lacks a field") from None

    def audit(self, job_id: str, timeout: Optional[float] = None) -> AuditReport:
        """What audits after delivery found about a job (also one already fetched and released).

        A volunteer caught lying later may have agreed with a second identity on tasks of a job
        that was already delivered; the node then recomputes those tasks. The report's `state` is
        "clean", "rechecking", "stands", "corrected" (its `outputs` are the job's corrected
        outputs, in the order run()/matmul() returned them) or "unverifiable" (the node had
        already deleted the job's data). Matmul jobs are always clean: each tile is checked alone.
        """
        request_id = self._take_id()
        self._send({"type": "audit", "id": request_id, "job": job_id}, [])
        wait = self._timeout if timeout is None else timeout
        self._wait(lambda: request_id in self._audit_replies or request_id in self._errors,
                   time.monotonic() + wait, "no reply to audit within %.0f s" % wait)
        if request_id in self._errors:
            raise remote_error(*self._errors.pop(request_id))
        return self._audit_replies.pop(request_id)

    def fetch(self, job_id: str, progress: bool = False,
              timeout: Optional[float] = None, out: Any = None) -> Any:
        """Attaches to an earlier matmul job, waits for its verified result, releases it and
        returns C (written into `out` when given, as matmul() does)."""
        return self._fetch(job_id, progress, timeout,
                           lambda summary, tensors: collect(self, job_id, summary, tensors, out))

    def _single(self, tensors: List[NDArray[Any]]) -> NDArray[Any]:
        if len(tensors) != 1:
            raise self._violation("a matmul job_done carries %d tensors, not 1" % len(tensors))
        return tensors[0]

    def _fetch(self, job_id: str, progress: bool, timeout: Optional[float],
               collect_result: Optional[_Collect] = None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        self.last_job = job_id
        self._released.discard(job_id)
        if job_id not in self._done and job_id not in self._failed:
            status = self._request({"type": "fetch", "job": job_id}, [])
            if status.get("type") != "job_status":
                raise self._violation("fetch was answered with %s" % json.dumps(status)[:200])
            state = status.get("state")
            if state == "released":
                raise RemoteError("not_found", "job %s was already released" % job_id)
            if state == "cancelled":  # its job_failed follows; nothing more will come
                # (A training job's rounds follow instead: fetch_train delivers them.)
                self._wait(lambda: job_id in self._failed or job_id in self._done,
                           time.monotonic() + self._timeout,
                           "no job_failed after job %s's cancelled status" % job_id)
                self._done.pop(job_id, None)
                code, message = self._failed.pop(job_id, ("cancelled",
                                                          "job %s was cancelled" % job_id))
                self._released.add(job_id)  # a second job_failed may follow: old news
                raise JobCancelledError(code, message)
            if state == "failed" and job_id not in self._done:
                code, message = self._failed.get(
                    job_id, (status.get("code", "internal"), status.get("message", "job failed")))
                raise remote_error(code, message)
            if isinstance(status.get("done"), int) and isinstance(status.get("total"), int):
                self._progress.setdefault(job_id, (status["done"], status["total"]))
        return self._finish(job_id, progress, deadline, collect_result)

    # -- handshake --------------------------------------------------------------------------------

    def _handshake(self, token: Optional[str]) -> None:
        hello: Dict[str, Any] = {"type": "hello", "id": self._take_id(),
                                 "protocol": PROTOCOL_VERSION, "catalog": CATALOG_VERSION}
        if token is not None:
            hello["token"] = token.strip()
        self._send(hello, [])
        deadline = time.monotonic() + self._timeout
        welcome, _ = self._receive(deadline)
        if welcome.get("type") != "welcome" or welcome.get("id") != hello["id"]:
            raise self._violation("expected welcome, got %s" % json.dumps(welcome)[:200])
        if welcome.get("protocol") != PROTOCOL_VERSION or welcome.get("catalog") != CATALOG_VERSION:
            raise VersionMismatchError("the node speaks protocol %r / catalog %r, this client "
                                       "%d / %d"
                                       % (welcome.get("protocol"), welcome.get("catalog"),
                                          PROTOCOL_VERSION, CATALOG_VERSION))
        limits = welcome.get("limits")
        if isinstance(limits, dict):
            for key, value in limits.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self.limits[key] = value

    # -- jobs -------------------------------------------------------------------------------------

    def _submit(self, A: Any, B: Any, tile: Optional[Sequence[int]],
                stream_into: Any = _NO_STREAM) -> str:
        """Submits C = A·B; with `stream_into` (None or `out`) it asks for the accepted tiles as
        they come (protocol 6), written into a TileStream that _finish's collect takes C from."""
        tile = check_tile(tile)
        if needs_blocks(self, A, B):  # staged at the node in row blocks (staged_inputs)
            m, n, dtype = check_shapes(A, B)
            self._check_product(m, n, dtype.itemsize, tile)
            reply = submit_staged(self, A, B, tile)
        else:
            A, B = validate_matmul_inputs(A, B)
            self._check_product(A.shape[0], B.shape[1], A.dtype.itemsize, tile)
            frames: List[OutgoingFrame] = [tensor_frame_parts(A), tensor_frame_parts(B)]
            request: Dict[str, Any] = {"type": "submit_matmul"}
            if tile is not None:
                request["tile"] = list(tile)
            if stream_into is not _NO_STREAM:
                request["stream"] = True
            reply = self._submit_request(request, frames)
        job = reply.get("job")
        if reply.get("type") != "job_accepted" or not isinstance(job, str):
            raise self._violation("submit_matmul was answered with %s" % json.dumps(reply)[:200])
        self.last_job = job
        if stream_into is not _NO_STREAM:
            try:
                stream = stream_of(reply, stream_into)
            except ProtocolError as exc:
                raise self._violation(str(exc)) from None
            if stream is not None:
                self._streams[job] = stream
        if isinstance(reply.get("tiles"), int):
            self._progress.setdefault(job, (0, reply["tiles"]))
        return job

    def _check_product(self, m: int, n: int, itemsize: int,
                       tile: Optional[Sequence[int]]) -> None:
        # A and B over the node's tensor limit travel in row blocks (staged_inputs), a large C
        # too (product_rows); whole, C is at most 256 MiB, below this client's default limit.
        node_limit = self.limits["max_tensor_bytes"]
        c_bytes = m * n * itemsize
        if c_bytes <= min(256 << 20, node_limit) and c_bytes > self._max_tensor_bytes:
            raise LimitExceededError("C would take %d bytes, over this client's max_tensor_bytes "
                                     "of %d (see connect())" % (c_bytes, self._max_tensor_bytes))
        if tile is not None:
            tiles = ((m + tile[0] - 1) // tile[0]) * ((n + tile[1] - 1) // tile[1])
            if tiles > self.limits["max_tiles"]:
                raise LimitExceededError("tile %s cuts C into %d tiles, over the node's limit of %d"
                                         % (list(tile), tiles, self.limits["max_tiles"]))

    def _finish(self, job: str, progress: bool, deadline: Optional[float],
                collect_result: Optional[_Collect] = None) -> Any:
        """Waits for job_done (or job_failed) of `job`, releases it and returns its tensors, or
        what `collect_result(summary, tensors)` makes of them (before the release: a failure
        there leaves the job at the node)."""
        # Job ids name their kind (docs/protocol.md): g- graph jobs count tasks, matmul jobs tiles.
        bar = ProgressBar(job, unit="tasks" if job.startswith("g-") else "tiles") \
            if progress else None
        if bar is not None:
            self._bars[job] = bar
            if job in self._progress:
                bar.update(*self._progress[job])
        try:
            self._wait(lambda: job in self._done or job in self._failed, deadline,
                       "job %s did not finish in time; it keeps running (fetch it later)" % job)
        finally:
            self._bars.pop(job, None)
            if bar is not None:
                bar.finish()
        self.last_job = job
        if job in self._failed:
            code, message = self._failed.pop(job)
            raise remote_error(code, message)
        summary, tensors = self._done.pop(job)
        self._progress.pop(job, None)
        self.last_summary = summary
        result = tensors if collect_result is None else collect_result(summary, tensors)
        self._release(job)
        return result

    def _release(self, job: str) -> None:
        try:
            self._request({"type": "release", "job": job}, [])
        except GoblinError as exc:
            # The result is already here: a failed release must not lose it.
            warnings.warn("releasing job %s failed: %s" % (job, exc), RuntimeWarning)
        # A fetch on the connection that submitted the job gets job_done twice (pushed and
        # fetched); drop whatever is left so a later fetch asks the node again.
        self._released.add(job)
        stashes: Tuple[Dict[str, Any], ...] = (self._done, self._failed, self._progress)
        for stash in stashes:
            stash.pop(job, None)

    # -- messages ---------------------------------------------------------------------------------

    def _take_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    def _request(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame],
                 timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends a request (with an id) and returns its reply; an `error` reply raises."""
        request_id = self._send_request(message, frames)
        return self._reply(request_id, message["type"], timeout)

    def _send_request(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame]) -> int:
        request_id = self._take_id()
        message = dict(message, id=request_id)
        if frames:
            message["tensors"] = len(frames)
        self._send(message, frames)
        return request_id

    def _reply(self, request_id: int, kind: str, timeout: Optional[float] = None) \
            -> Dict[str, Any]:
        wait = self._timeout if timeout is None else timeout
        self._wait(lambda: request_id in self._replies or request_id in self._errors,
                   time.monotonic() + wait, "no reply to %s within %.0f s" % (kind, wait))
        if request_id in self._errors:
            raise remote_error(*self._errors.pop(request_id))
        return self._replies.pop(request_id)

    def _submit_request(self, message: Dict[str, Any],
                        frames: Sequence[OutgoingFrame]) -> Dict[str, Any]:
        """A submit_* request; a KeyboardInterrupt never leaves an orphaned job at the node.

        Interrupted while its frames are sent, the node holds half a message, never a job: the
        connection (out of step now) is closed, which drops it. Interrupted while the acceptance
        is awaited, the job may be durable already: the reply is awaited anyway and the job
        cancelled before the interrupt goes on.
        """
        try:
            request_id = self._send_request(message, frames)
        except KeyboardInterrupt:
            self._lost(ConnectionLostError("interrupted while uploading %s: nothing was "
                                           "submitted" % message["type"]))
            raise
        try:
            return self._reply(request_id, message["type"])
        except KeyboardInterrupt:
            self._cancel_unwanted(request_id, message["type"])
            raise

    def _cancel_unwanted(self, request_id: int, kind: str) -> None:
        try:
            reply = self._reply(request_id, kind)
            job = reply.get("job")
            if reply.get("type") == "job_accepted" and isinstance(job, str):
                self.cancel(job)
                sys.stderr.write("goblin: interrupted; job %s was cancelled at the node\n" % job)
        except GoblinError as error:  # refused, or the connection is gone: no job to orphan
            sys.stderr.write("goblin: interrupted while %s was answered (%s)\n" % (kind, error))

    def _poll(self) -> None:
        """Files whatever the node has sent already, without waiting."""
        while True:
            try:
                self._absorb(*self._receive(time.monotonic(), "nothing pending"))
            except GoblinTimeoutError:
                return

    def _wait(self, ready: Callable[[], bool], deadline: Optional[float],
              timeout_message: str) -> None:
        while not ready():
            if deadline is not None and time.monotonic() >= deadline:
                raise GoblinTimeoutError(timeout_message)
            self._absorb(*self._receive(deadline, timeout_message))

    def _absorb(self, message: Dict[str, Any], tensors: List[NDArray[Any]]) -> None:
        """Files one incoming message where the waits above look for it."""
        kind = message.get("type")
        job = message.get("job")
        if kind in ("progress", "job_done", "job_failed", "train_round") and job in self._released:
            return  # late news of a job whose result this client already returned
        if kind == "result_tile":
            stream = self._streams.get(job) if isinstance(job, str) else None
            if stream is not None:  # else a job given up on (timeout): fetch gets C whole
                try:
                    stream.add(message, tensors)
                except ProtocolError as exc:
                    raise self._violation(str(exc)) from None
            return
        if kind == "train_round" and isinstance(job, str):
            if not isinstance(message.get("round"), dict):
                raise self._violation("train_round carries no round record")
            self._train_rounds.setdefault(job, []).append(message["round"])
            return
        if kind == "progress" and isinstance(job, str):
            done, total = message.get("done"), message.get("total")
            if isinstance(done, int) and isinstance(total, int):
                self._progress[job] = (done, total)
                if job in self._bars:
                    self._bars[job].update(done, total)
            waiting = message.get("waiting")
            if isinstance(waiting, str) and waiting:
                if self._waiting.get(job) != waiting and job in self._bars:
                    self._bars[job].note("goblin: job %s waits: %s" % (job, waiting))
                self._waiting[job] = waiting
            else:
                self._waiting.pop(job, None)
        elif kind == "job_done" and isinstance(job, str):
            summary = message.get("summary")
            delivery = summary.get("delivery") if isinstance(summary, dict) else None
            if delivery == "tiles" and job not in self._streams:
                return  # the tiles of a job given up on: a later fetch gets C whole
            if not tensors and delivery not in ("rows", "tiles"):
                raise self._violation("job_done carries no tensor")
            self._done[job] = (summary if isinstance(summary, dict) else {}, tensors)
        elif kind == "audit_report":
            try:
                report = parse_audit_report(message, tensors)
            except ProtocolError as exc:
                raise self._violation(str(exc)) from None
            if message.get("id") == 0:
                self.audit_notices.append(report)
            elif isinstance(message.get("id"), int):
                self._audit_replies[message["id"]] = report
        elif kind == "job_failed" and isinstance(job, str):
            # The first word on a failure stands (a cancel pushed to watchers names who did it).
            self._failed.setdefault(job, (str(message.get("code", "internal")),
                                          str(message.get("message", ""))))
        elif kind == "error":
            code, text = str(message.get("code", "internal")), str(message.get("message", ""))
            if not isinstance(message.get("id"), int):
                raise remote_error(code, text)
            self._errors[message["id"]] = (code, text)
        elif isinstance(message.get("id"), int):
            self._replies[message["id"]] = message
            if kind == "result_rows":
                self._reply_tensors[message["id"]] = tensors
        # Anything else is a message a newer node may send; this client has no use for it.

    def _send(self, message: Dict[str, Any], frames: Sequence[OutgoingFrame]) -> None:
        self._check_open()
        try:
            self._ws.send(json.dumps(message, separators=(",", ":")))
            for frame in frames:
                # A frame in parts goes as fragments of one message: its elements are masked
                # straight from the array, never first joined to the header (a 64 MiB copy).
                self._ws.send(frame if isinstance(frame, bytes) else list(frame))
        except ConnectionClosed as exc:
            raise self._lost(_closed_error(exc)) from None

    def _receive(self, deadline: Optional[float], timeout_message: str = "no reply in time") \
            -> Message:
        """The next control message and the tensors it announces."""
        raw = self._receive_raw(deadline, timeout_message)
        if not isinstance(raw, str):
            raise self._violation("a binary frame arrived that no message announced")
        try:
            message = json.loads(raw)
        except ValueError:
            raise self._violation("a text frame is not JSON: %r" % raw[:80]) from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise self._violation("a control message has no type: %r" % raw[:80])
        count = message.get("tensors", 0)
        if not isinstance(count, int) or not 0 <= count <= MAX_TENSORS_PER_MESSAGE:
            raise self._violation("a message announces %r tensors" % (count,))
        tensors: List[NDArray[Any]] = []
        for _ in range(count):
            # Once a message is half read, a timeout would leave the stream out of step.
            frame = self._receive_raw(time.monotonic() + max(self._timeout, 60.0), None)
            if isinstance(frame, str):
                raise self._violation("a text frame arrived while tensors were due")
            try:
                tensors.append(decode_tensor_frame(frame, self._max_tensor_bytes))
            except FrameError as exc:
                raise self._lost(exc) from None
        return message, tensors

    def _receive_raw(self, deadline: Optional[float],
                     timeout_message: Optional[str]) -> Union[str, bytes]:
        self._check_open()
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return self._ws.recv(timeout=remaining)
        except TimeoutError:
            if timeout_message is None:
                raise self._lost(ConnectionLostError("the node stopped sending mid-message"))
            raise GoblinTimeoutError(timeout_message) from None
        except ConnectionClosed as exc:
            raise self._lost(_closed_error(exc)) from None

    def _check_open(self) -> None:
        if self._broken is not None:
            raise ConnectionLostError("the connection is closed: %s" % self._broken)

    def _violation(self, text: str) -> ProtocolError:
        return self._lost(ProtocolError("the node broke the protocol: " + text))

    def _lost(self, error: _Error) -> _Error:
        """Marks the connection unusable after `error` and closes it; returns `error`."""
        if self._broken is None:
            self._broken = error
            code, reason = 1000, ""
            if isinstance(error, ProtocolError):
                # Tell the node why, in the close-reason form of docs/protocol.md.
                code = 1009 if error.code == "limit_exceeded" else 1002
                reason = ("%s: %s" % (error.code, error)).encode("utf-8")[:123].decode(
                    "utf-8", "ignore")
            try:
                self._ws.close(code, reason)
            except Exception:
                pass
        return error
