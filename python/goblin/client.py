"""Synchronous researcher client for a GPU Goblin lab node (docs/protocol.md, /v1/researcher):
the façade over the layers below it.

    goblin.protocol   Sans-I/O: message forms, frame assembly, the session (no sockets, no clocks)
    goblin.transport  the WebSocket (the only module that imports websockets)
    goblin.connection a session driven over a transport: sends, receives, bounded waits
    goblin.lifecycle  what every job shares: wait, collect, release, fetch, list, audit, cancel
    kinds             goblin.matmul, goblin.graph_job, goblin.training: each job kind's requests

One Client owns one connection and is used from one thread at a time. Every wait is bounded:
replies by the connect() timeout, jobs by the timeout given to matmul()/fetch().
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from . import lifecycle
from . import matmul as matmul_kind
from .audit import AuditReport
from .connection import Connection
from .errors import InputError
from .estimate import Estimate
from .graph_job import submit_graph
from .jobs import Job, JobInfo
from .notices import DATA_WARNING, NOTICE
from .plan_preview import Plan, plan_graph, plan_training
from .protocol.session import ResearcherSession
from .protocol.messages import (CATALOG_VERSION, DEFAULT_LIMITS, FRAME_OVERHEAD_BYTES,
                                MAX_TENSORS_PER_MESSAGE, PROTOCOL_VERSION, RESEARCHER_PATH)
from .transport import Transport
from .wire import DEFAULT_MAX_TENSOR_BYTES

if TYPE_CHECKING:
    import torch
    from numpy.typing import NDArray

    from .graph_job import BatchSpec, GraphLike
    from .optim import Optimizer
    from .training_result import RoundRecord, TrainResult



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
    tensor this client accepts from the node. The first connect of a process prints
    goblin.DATA_WARNING on stderr.
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
    if ca_file is None and url.startswith("wss://"):
        ca_file = os.environ.get("GOBLIN_CA_FILE")
    transport = Transport.open(url, timeout, max_tensor_bytes, ca_file)
    client = Client(transport, timeout=timeout, max_tensor_bytes=max_tensor_bytes)
    try:
        client.connection.handshake(token)
    except BaseException:
        client.close()
        raise
    NOTICE.on_connect()
    return client


class Client:
    """A researcher session with one lab node. Create it with goblin.connect().

    `connection` is the goblin.connection.Connection it drives, `session` that connection's
    Sans-I/O goblin.protocol.ResearcherSession (requests, replies, one JobState per job)."""

    def __init__(self, transport: Transport, timeout: float, max_tensor_bytes: int) -> None:
        self.connection = Connection(transport, timeout, max_tensor_bytes)

    @property
    def session(self) -> ResearcherSession:
        return self.connection.session

    @property
    def transport(self) -> Transport:
        return self.connection.transport

    @property
    def audit_notices(self) -> List[AuditReport]:
        """Reports the node pushed when an audit of one of this researcher's jobs ended (a
        volunteer whose results the job used was caught later), in arrival order. They arrive
        while this client waits for something; audit(job_id) asks at any time."""
        return self.connection.session.audit_notices

    @property
    def limits(self) -> Dict[str, int]:
        """The node's limits, from its welcome."""
        return self.connection.session.limits

    @property
    def last_summary(self) -> Optional[Dict[str, Any]]:
        """The summary dict of the last job whose result this client returned."""
        return self.connection.last_summary

    @property
    def last_estimate(self) -> Optional[Estimate]:
        """The size of the last job this client submitted (a goblin.Estimate: bytes uploaded,
        tiles or tasks, FLOPs), stated before its upload; progress=True prints it."""
        return self.connection.last_estimate

    @property
    def last_job(self) -> Optional[str]:
        """The id ("j-...") of the last job this client submitted or fetched."""
        return self.connection.last_job

    # -- public API -------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection (normal closure). Jobs keep running at the node."""
        self.connection.close()

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
        None). The job's size (`last_estimate`) is checked against this researcher's quota at
        the node before anything is uploaded (LimitExceededError naming the limit). NaN and Inf
        are always refused here: the node's Freivalds check needs finite values.
        `progress=True` prints goblin.DATA_WARNING and the job's size, then draws a progress bar
        on stderr. `timeout` bounds the whole job in
        seconds (None: wait as long as the job runs); on timeout GoblinTimeoutError is raised and
        the job keeps running (see last_job and fetch()).

        Returns C (m×n, same dtype), a read-only array viewing the received bytes (use .copy()
        for a writable one), or `out` with C written into it: a numpy array or numpy.memmap, an
        h5py dataset, anything with that shape and dtype and slice assignment (checked before
        anything is submitted). A product over 256 MiB (or the node's tensor limit) comes in row
        blocks of at most 64 MiB, each written into `out` as it arrives: C can be larger than
        this machine's memory when `out` is a memmap. Tiles of at least 1 MiB come as each is
        accepted, while the rest compute (summary "delivery": "tiles"), written into
        C, or straight into `out` when it is a numpy array (which then holds some tiles when
        the job fails). The job's summary is kept in
        `last_summary`; the job is released at the node once C is here (not when writing into
        `out` failed: fetch(job, out=...) again). Raises RemoteError when the node refuses the
        job or it fails, ConnectionLostError when the connection drops.
        """
        return matmul_kind.matmul(self.connection, A, B, progress, tile, timeout, out)

    def run(self, graph: GraphLike, inputs: Sequence[NDArray[Any]],
            batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
            progress: bool = False, timeout: Optional[float] = None,
            micro_batch: Optional[int] = None,
            verification: str = "replicas",
            allow_nonfinite: bool = False) -> List[NDArray[Any]]:
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
        m of them. The summary of the job is in `last_summary`. Inputs holding NaN or Inf are
        refused (InputError, as matmul() refuses them) unless `allow_nonfinite=True`. The job's
        size is checked against the quota before anything is uploaded; `progress=True` prints
        goblin.DATA_WARNING and the size, then the progress.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        job = Job(submit_graph(self.connection, graph, inputs, batch=batch, chunks=chunks,
                               micro_batch=micro_batch, verification=verification,
                               progress=progress, allow_nonfinite=allow_nonfinite),
                  self, "graph")
        with lifecycle.InterruptNote(job, "fetch_outputs"):
            outputs: List[NDArray[Any]] = lifecycle.finish(self.connection, job, progress,
                                                           deadline)
            return outputs

    def submit_graph(self, graph: GraphLike, inputs: Sequence[NDArray[Any]],
                     batch: Optional[BatchSpec] = None,
                     chunks: Optional[int] = None, micro_batch: Optional[int] = None,
                     verification: str = "replicas", allow_nonfinite: bool = False) -> Job:
        """Submits a graph job (see run()) and returns its handle (a goblin.Job, which is also its
        id): collect it with job.result() or fetch_outputs(job), cancel it with job.cancel()."""
        job = submit_graph(self.connection, graph, inputs, batch=batch, chunks=chunks,
                           micro_batch=micro_batch, verification=verification,
                           allow_nonfinite=allow_nonfinite)
        return Job(job, self, "graph")

    def plan(self, graph: GraphLike, inputs: Sequence[NDArray[Any]],
             batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
             micro_batch: Optional[int] = None, verification: str = "replicas") -> Plan:
        """How the node would cut this graph job (the arguments of run()) for the volunteers
        connected now, before anything of it travels: tasks, batch ranges and stages, the memory
        a task holds, boundary values, traffic and FLOPs, and why it would wait, if it would
        (goblin.Plan; print it for a table). Only the inputs' shapes are sent."""
        return plan_graph(self.connection, graph, inputs, batch=batch, chunks=chunks,
                          micro_batch=micro_batch, verification=verification)

    def plan_train(self, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
                   batch_size: int = 32, micro_batch: Optional[int] = None,
                   verification: str = "replicas") -> Plan:
        """How the node would cut each round of this training job (the arguments of train()) for
        the volunteers connected now: a round is one task per micro-batch, each cut into stages
        when its step does not fit (see plan()). Nothing is uploaded."""
        return plan_training(self.connection, model, loss_fn, data, batch_size=batch_size,
                             micro_batch=micro_batch, verification=verification)

    def train(self, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
              optimizer: Optional[Optimizer] = None, rounds: Optional[int] = None,
              batch_size: int = 32, micro_batch: Optional[int] = None,
              clip_grad_norm: Optional[float] = None,
              callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = True,
              resume: Optional[TrainResult] = None, timeout: Optional[float] = None,
              dropout_seed: int = 0, verification: str = "replicas",
              allow_nonfinite: bool = False) -> TrainResult:
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

        NaN or Inf in the parameters or in x (the arrays, or a stream's first batch) is refused
        (InputError, as matmul() and run() refuse it) unless `allow_nonfinite=True`. The job's
        size is checked against the quota before anything is uploaded; `progress=True` (the
        default) prints goblin.DATA_WARNING and the size, then each round.
        """
        from .training import train
        return train(self.connection, model, loss_fn, data, optimizer=optimizer, rounds=rounds,
                     batch_size=batch_size, micro_batch=micro_batch, clip_grad_norm=clip_grad_norm,
                     callback=callback, progress=progress, resume=resume, timeout=timeout,
                     dropout_seed=dropout_seed, verification=verification,
                     allow_nonfinite=allow_nonfinite)

    def submit_train(self, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
                     optimizer: Optional[Optimizer] = None, rounds: Optional[int] = None,
                     batch_size: int = 32, micro_batch: Optional[int] = None,
                     clip_grad_norm: Optional[float] = None, resume: Optional[TrainResult] = None,
                     dropout_seed: int = 0, verification: str = "replicas",
                     allow_nonfinite: bool = False) -> Job:
        """Submits a training job (see train()) and returns its handle (a goblin.Job, also its
        id) once it is durable at the node; follow it with job.result() or fetch_train(), on
        this connection or a later one."""
        from .training import submit_train
        job = submit_train(self.connection, model, loss_fn, data, optimizer=optimizer,
                           rounds=rounds, batch_size=batch_size, micro_batch=micro_batch,
                           clip_grad_norm=clip_grad_norm, resume=resume,
                           dropout_seed=dropout_seed, verification=verification,
                           allow_nonfinite=allow_nonfinite)
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
        return fetch_train(self.connection, job_id, model=model, optimizer=optimizer,
                           batch_size=batch_size, callback=callback, progress=progress,
                           timeout=timeout, data=data)

    def fetch_outputs(self, job_id: str, progress: bool = False,
                      timeout: Optional[float] = None) -> List[NDArray[Any]]:
        """Like fetch(), for a graph job: returns the list of its outputs."""
        outputs: List[NDArray[Any]] = lifecycle.fetch(self.connection, job_id, progress, timeout)
        return outputs

    def submit_matmul(self, A: NDArray[Any], B: NDArray[Any],
                      tile: Optional[Sequence[int]] = None) -> Job:
        """Submits C = A @ B and returns the job's handle once the job is durable at the node.

        Same checks and data warning as matmul(). The handle (a goblin.Job) is also the job id:
        collect the result with job.result() or fetch(job), on this connection or on a later
        one (e.g. after the node restarted); job.cancel() stops it.
        """
        return Job(matmul_kind.submit(self.connection, A, B, tile), self, "matmul")

    def cancel(self, job_id: str, timeout: Optional[float] = None) -> str:
        """Cancels one of this researcher's jobs at the node and returns its state
        ("cancelled"). Its queued tasks and leases are dropped and its data deleted; a training
        job keeps the rounds it committed (fetch_train delivers them). Waiting for it then
        raises JobCancelledError (TrainingError with code "cancelled" for training). A job that
        already finished raises InputError; an unknown one, or another researcher's, RemoteError
        with code not_found."""
        return self.connection.cancel(job_id, timeout)

    def jobs(self, timeout: Optional[float] = None) -> List[JobInfo]:
        """This researcher's jobs at the node, newest first (at most 1000): goblin.JobInfo with
        id, kind, state, done, total, created (a timezone-aware UTC datetime) and created_epoch.
        Never another researcher's."""
        return lifecycle.list_jobs(self.connection, timeout)

    def audit(self, job_id: str, timeout: Optional[float] = None) -> AuditReport:
        """What audits after delivery found about a job (also one already fetched and released).

        A volunteer caught lying later may have agreed with a second identity on tasks of a job
        that was already delivered; the node then recomputes those tasks. The report's `state` is
        "clean", "rechecking", "stands", "corrected" (its `outputs` are the job's corrected
        outputs, in the order run()/matmul() returned them) or "unverifiable" (the node had
        already deleted the job's data). Matmul jobs are always clean: each tile is checked alone.
        A training job's audit covers its rounds: when one is corrected after the job ended, the
        node trains the job again from it ("rechecking", then "corrected" with `outputs` the flat
        parameters and the optimizer state; fetch_train(job, model) returns that TrainResult).
        """
        return lifecycle.audit(self.connection, job_id, timeout)

    def fetch(self, job_id: str, progress: bool = False,
              timeout: Optional[float] = None, out: Any = None) -> Any:
        """Attaches to an earlier matmul job, waits for its verified result, releases it and
        returns C (written into `out` when given, as matmul() does). A job already released
        raises goblin.JobReleasedError (a RemoteError with code not_found)."""
        return matmul_kind.fetch(self.connection, job_id, progress, timeout, out)


__all__ = ["CATALOG_VERSION", "DATA_WARNING", "DEFAULT_LIMITS", "FRAME_OVERHEAD_BYTES",
           "MAX_TENSORS_PER_MESSAGE", "PROTOCOL_VERSION", "RESEARCHER_PATH", "Client", "connect"]
