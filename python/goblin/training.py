"""Training a PyTorch model on the network: `Client.train` (docs/training.md).

The client captures the training step once, (flat params, x, y) → (loss, flat grad), at the
micro-batch size, and submits a training job: the step, every sample of the data, the initial
parameters and the optimizer. The lab node holds the parameters and optimizer state and runs the
rounds: each round's micro-batches are verified graph tasks, their losses and gradients averaged in
float64, the optimizer step taken at the node, the round committed before the next starts. The
client follows the job (train_round after each round) and gets the parameters at the end.
"""

from __future__ import annotations

import sys
import time
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Sequence,
                    Tuple)

import numpy as np

from . import lifecycle
from . import optim as goblin_optim
from .capture import require_torch
from .errors import ConnectionLostError, InputError, RemoteError
from .estimate import Estimate
from .graph_job import VERIFICATIONS, graph_request
from .training_result import RoundRecord, TrainingError, TrainResult
from .training_stream import BatchStream, array_pair, batch_pair
from .validation import check_finite
from .wire import tensor_frame_parts

if TYPE_CHECKING:
    import torch
    from numpy.typing import NDArray

    from .connection import Connection


MAX_DROPOUT_SEED = 1 << 62  # the node's bound: seed + round stays an int64


def _dataset(data: Any, batch_size: int, rounds: Optional[int]) \
        -> Tuple[NDArray[Any], NDArray[Any], int, Optional[BatchStream]]:
    """x, y, the rounds and the stream: every sample of arrays (uploaded with the job), or an
    iterable's first batch and the stream of the others (round k of the job trains batch k;
    `rounds` defaults to the iterable's len())."""
    pair = array_pair(data)
    if pair is not None:
        if rounds is None:
            raise InputError("rounds is needed when data is arrays (an iterable of batches "
                             "trains one round per batch)")
        return pair[0], pair[1], rounds, None
    if not hasattr(data, "__iter__"):
        raise InputError("data is a pair (x, y) of arrays or an iterable of (x, y) batches, not "
                         "%s" % type(data).__name__)
    if rounds is None:
        if not hasattr(data, "__len__"):
            raise InputError("rounds is needed when the iterable of batches has no len() (it "
                             "trains one round per batch)")
        rounds = len(data)
        if rounds < 1:
            raise InputError("the iterable of batches is empty")
    batches = iter(data)
    try:
        first = next(batches)
    except StopIteration:
        raise InputError("the iterable of batches is empty") from None
    x, y = batch_pair(first, 0, batch_size)
    return x, y, rounds, BatchStream(batches, 1, rounds, batch_size, like=(x, y))


def _check_sizes(batch_size: int, micro_batch: int, rounds: Optional[int]) -> None:
    for name, value in (("batch_size", batch_size), ("micro_batch", micro_batch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError("%s must be a positive integer, not %r" % (name, value))
    if batch_size % micro_batch:
        raise InputError("micro_batch %d does not divide batch_size %d" % (micro_batch, batch_size))
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer))
                               or rounds < 1):
        raise InputError("rounds must be a positive integer, not %r" % (rounds,))


class TrainingContext(NamedTuple):
    """What a training job's kind keeps in its JobState.context on the connection that
    submitted it (or fetched it with a model)."""
    layout: "Layout"
    optimizer: goblin_optim.Optimizer
    batch_size: int
    stream: Optional[BatchStream]


class Layout:
    """The model's trainable parameters as one flat float32 vector (names, shapes, offsets)."""

    def __init__(self, torch: Any, model: torch.nn.Module) -> None:
        self.torch = torch
        self.model = model
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise InputError("the model has no parameter that requires a gradient")
        for name, p in named:
            if p.dtype != torch.float32:
                raise InputError("parameter %s is %s; training runs in float32" % (name, p.dtype))
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.sizes = [int(p.numel()) for _, p in named]

    def flat(self) -> NDArray[Any]:
        return np.concatenate([p.detach().cpu().numpy().astype(np.float32).ravel()
                               for n, p in self.model.named_parameters() if n in self.names])

    def unflat(self, flat: NDArray[Any]) -> Dict[str, NDArray[Any]]:
        parts, offset = {}, 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes):
            parts[name] = np.array(flat[offset:offset + size], dtype=np.float32).reshape(shape)
            offset += size
        return parts

    def state_dict(self, flat: NDArray[Any]) -> Dict[str, Any]:
        """The model's state dict with the trained parameters: a parameter tied under several
        names (an LM head that is its token embedding) gets the trained value under every one."""
        trained = self.unflat(flat)
        named = {id(p): n for n, p in self.model.named_parameters() if n in trained}
        state = {}
        for key, value in self.model.state_dict(keep_vars=True).items():
            name = named.get(id(value))
            state[key] = self.torch.from_numpy(trained[name].copy()) if name is not None \
                else value.detach().clone()
        return state

    def step(self, loss_fn: Callable[..., Any]) -> Callable[..., Tuple[Any, Any]]:
        """(flat params, x, y) → (loss, flat grad): what every micro-batch task computes."""
        torch, model, names, shapes, sizes = (self.torch, self.model, self.names, self.shapes,
                                              self.sizes)
        functional_call = torch.nn.utils.stateless.functional_call

        def step(flat: Any, x: Any, y: Any) -> Tuple[Any, Any]:
            flat = flat.detach().requires_grad_(True)
            params = {n: part.view(s) for n, part, s in zip(names, torch.split(flat, sizes),
                                                              shapes)}
            loss = loss_fn(functional_call(model, params, (x,)), y)
            (grad,) = torch.autograd.grad(loss, [flat])
            return loss, grad

        return step


def train_request(connection: Connection, layout: Layout, loss_fn: Callable[..., Any], x: NDArray[Any],
             y: NDArray[Any], flat: NDArray[Any], optimizer: goblin_optim.Optimizer,
             first_round: int, rounds: int, batch_size: int, micro_batch: int,
             clip_grad_norm: Optional[float], dropout_seed: int = 0,
             streamed: bool = False,
             verification: str = "replicas") -> Tuple[Dict[str, Any], List[NDArray[Any]]]:
    """The submit_train message and its tensor frames."""
    from .capture import capture
    torch = layout.torch
    example = [torch.from_numpy(flat.copy()), torch.from_numpy(np.array(x[:micro_batch])),
               torch.from_numpy(np.array(y[:micro_batch]))]
    captured = capture(layout.step(loss_fn), *example)
    graph, arrays = graph_request(captured, [a.numpy() for a in example],
                                  max_tensors=connection.limits["max_tensors_per_message"],
                                  max_tensor_bytes=connection.limits["max_tensor_bytes"])
    arrays[1], arrays[2] = x, y  # every sample; the graph declares one micro-batch
    train = {"params": 0, "data": [1, 2], "batch_size": int(batch_size),
             "micro_batch": int(micro_batch), "rounds": int(rounds),
             "first_round": int(first_round),
             "clip_grad_norm": None if clip_grad_norm is None else float(clip_grad_norm),
             "optimizer": optimizer.wire(first_round, rounds),
             "dropout_seed": int(dropout_seed)}
    if streamed:
        train["stream"] = True
    if verification != "replicas":
        train["verification"] = verification
    return {"type": "submit_train", "graph": graph["graph"], "train": train}, arrays


def round_plan_request(connection: Connection, model: torch.nn.Module,
                       loss_fn: Callable[..., Any], data: Any, batch_size: int = 32,
                       micro_batch: Optional[int] = None,
                       verification: str = "replicas") -> Dict[str, Any]:
    """The plan_graph message of one round of the training job these arguments of train() would
    submit: the captured step, one micro-batch per task, `batch_size` rows (the graph job the node
    makes of each round). Reads an iterable's first batch."""
    if verification not in VERIFICATIONS:
        raise InputError("verification is one of %s, not %r"
                         % (", ".join(repr(v) for v in VERIFICATIONS), verification))
    micro = batch_size if micro_batch is None else micro_batch
    _check_sizes(batch_size, micro, None)
    x, y, _, _ = _dataset(data, batch_size, 1)
    if x.shape[0] < batch_size:
        raise InputError("data has %d samples, fewer than one batch of %d" % (x.shape[0],
                                                                            batch_size))
    layout = Layout(require_torch(), model)
    request, arrays = train_request(connection, layout, loss_fn, x, y, layout.flat(),
                                    goblin_optim.SGD(lr=0.0), 0, 1, batch_size, micro, None)
    message: Dict[str, Any] = {
        "type": "plan_graph", "graph": request["graph"], "rows": int(batch_size),
        "batch": {"inputs": [None, 0, 0] + [None] * (len(arrays) - 3),
                  "outputs": ["mean", "mean"], "micro_batch": int(micro)}}
    if verification != "replicas":
        message["verification"] = verification
    return message


def submit_train(connection: Connection, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
                 optimizer: Optional[goblin_optim.Optimizer] = None, rounds: Optional[int] = None,
                 batch_size: int = 32, micro_batch: Optional[int] = None,
                 clip_grad_norm: Optional[float] = None,
                 resume: Optional[TrainResult] = None, dropout_seed: int = 0,
                 verification: str = "replicas", progress: bool = False,
                 allow_nonfinite: bool = False) -> str:
    """See Client.submit_train."""
    if verification not in VERIFICATIONS:
        raise InputError("verification is one of %s, not %r"
                         % (", ".join(repr(v) for v in VERIFICATIONS), verification))
    if isinstance(dropout_seed, bool) or not isinstance(dropout_seed, (int, np.integer)) \
            or not 0 <= dropout_seed <= MAX_DROPOUT_SEED:
        raise InputError("dropout_seed is an integer from 0 to 2**62")
    torch = require_torch()
    micro = batch_size if micro_batch is None else micro_batch
    _check_sizes(batch_size, micro, rounds)
    x, y, rounds, stream = _dataset(data, batch_size, rounds)
    if x.shape[0] < batch_size:
        raise InputError("data has %d samples, fewer than one batch of %d" % (x.shape[0],
                                                                            batch_size))
    layout = Layout(torch, model)
    state: List[NDArray[Any]] = []
    if resume is not None:
        if not isinstance(resume, TrainResult):
            raise InputError("resume= is the TrainResult of an earlier run")
        if sorted(resume.params) != sorted(layout.names):
            raise InputError("resume= comes from a model with other parameters")
        flat, optimizer = resume.flat_params, resume.optimizer
        state, first_round = list(resume.optimizer_state), resume.rounds
    else:
        flat = layout.flat()
        optimizer = optimizer if optimizer is not None else goblin_optim.AdamW()
        first_round = 0
    if clip_grad_norm is not None and not (isinstance(clip_grad_norm, (int, float))
                                           and clip_grad_norm > 0):
        raise InputError("clip_grad_norm is a positive number or None")
    if not isinstance(optimizer, goblin_optim.Optimizer):
        raise InputError("optimizer is a goblin.optim optimizer (SGD, Adam, AdamW), not %s"
                         % type(optimizer).__name__)
    request, arrays = train_request(connection, layout, loss_fn, x, y, flat, optimizer, first_round,
                               rounds, batch_size, micro, clip_grad_norm, dropout_seed,
                               streamed=stream is not None, verification=verification)
    if not allow_nonfinite:
        for name, array in (("the parameters", flat), ("x", x), ("y", y)):
            check_finite(name, array, "train")
    tasks = rounds * (batch_size // micro)
    lifecycle.check_quota(connection, Estimate("train", sum(int(a.nbytes) for a in arrays + state),
                                               tasks, "tasks", None), progress)
    frames = [tensor_frame_parts(a) for a in arrays + state]
    reply = connection.submit_request(request, frames)
    job = reply.get("job")
    if reply.get("type") != "job_accepted" or not isinstance(job, str):
        raise connection.violation("submit_train was answered with %r" % (reply,))
    connection.last_job = job
    connection.session.job(job).context = TrainingContext(layout, optimizer, batch_size, stream)
    if stream is not None:
        stream.feed(connection, job, 0)
    return job


def _round_records(connection: Connection, job: str, seen: int,
                   samples: int) -> List[RoundRecord]:
    rounds = connection.session.job(job).rounds
    try:
        return [RoundRecord.from_wire(r, samples) for r in rounds[seen:]]
    except (KeyError, TypeError, ValueError) as error:
        raise connection.violation("a train_round record is malformed: %s" % error) from None


def _result(connection: Connection, job: str, layout: Layout, optimizer: goblin_optim.Optimizer,
            summary: Dict[str, Any], tensors: Sequence[NDArray[Any]],
            batch_size: int) -> TrainResult:
    history = [RoundRecord.from_wire(r, batch_size) for r in summary.get("history", [])]
    if not tensors:
        raise connection.violation("a training job's job_done carries no parameters")
    flat = np.array(tensors[0], dtype=np.float32)
    state = [np.array(t, dtype=np.float32) for t in tensors[1:]]
    rounds = int(summary.get("first_round", 0)) + int(summary.get("rounds", len(history)))
    optimizer.steps = rounds
    return TrainResult(layout.state_dict(flat), history, layout.unflat(flat), optimizer, rounds,
                       job, flat, state)


def fetch_train(connection: Connection, job: str, model: Optional[torch.nn.Module] = None,
                optimizer: Optional[goblin_optim.Optimizer] = None,
                batch_size: Optional[int] = None,
                callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = False,
                timeout: Optional[float] = None, data: Any = None) -> TrainResult:
    """See Client.fetch_train."""
    state = connection.session.job(job)
    known = state.context
    if not isinstance(known, TrainingContext):
        if model is None:
            raise InputError("fetch_train of a job submitted on another connection needs the "
                             "model (its parameter names and shapes)")
        known = TrainingContext(Layout(require_torch(), model),
                                optimizer or goblin_optim.AdamW(), batch_size or 0, None)
    layout, samples, stream = known.layout, known.batch_size, known.stream
    deadline = None if timeout is None else time.monotonic() + timeout
    state.released = False
    seen = state.rounds_seen  # records given to callback by an earlier fetch_train
    rounds_done = 0
    if not state.finished:
        try:
            status = connection.request({"type": "fetch", "job": job}, [])
        except RemoteError as error:
            raise TrainingError(str(error), None, job, code=error.code) from error
        if status.get("type") != "job_status":
            raise connection.violation("fetch was answered with %r" % (status,))
        rounds_done = int(status.get("done", 0))
        if data is not None and status.get("state") == "running":
            stream = BatchStream.restarted(data, rounds_done, int(status.get("total", 0)),
                                           samples or batch_size or 0)
        elif data is not None:
            raise InputError("training job %s is %s; it takes no data" % (job, status.get("state")))
    try:
        if stream is not None:
            stream.feed(connection, job, rounds_done)
        while True:
            connection.wait(lambda: state.finished or len(state.rounds) > seen, deadline,
                            "training job %s did not finish in time; it keeps running at the "
                            "node (client.fetch_train(%r, model))" % (job, job))
            for record in _round_records(connection, job, seen, samples):
                seen += 1
                state.rounds_seen = seen
                rounds_done = max(rounds_done, seen)
                if stream is not None:
                    stream.feed(connection, job, rounds_done)
                if progress:
                    sys.stderr.write("%s round %d: loss %.6g, %d tasks verified, %d rejected, "
                                     "%.2f s\n" % (job, record.round, record.loss,
                                                   record.verified_tasks, record.rejected,
                                                   record.seconds))
                    sys.stderr.flush()
                if callback is not None:
                    callback(record)
            if state.failed is not None:  # the node still has the rounds committed before it
                state.failed = None
                connection.request({"type": "fetch", "job": job}, [])
            elif state.done is not None:
                break
    except ConnectionLostError as error:
        raise TrainingError("%s; training job %s keeps running at the node: re-attach with "
                            "client.fetch_train(%r, model)" % (error, job, job), None, job,
                            code=error.code) from error
    assert state.done is not None
    summary, tensors = state.done
    state.done = None
    state.rounds, state.rounds_seen = [], 0
    connection.last_job = job
    connection.last_summary = summary
    result = _result(connection, job, layout, known.optimizer, summary, tensors, samples)
    lifecycle.release(connection, job)
    if summary.get("state") in ("failed", "cancelled"):  # its committed rounds are in `result`
        failure = str(summary.get("error", "the training job " + str(summary.get("state"))))
        code, _, message = failure.partition(": ")
        raise TrainingError(message or failure, result, job, code=code if message else None)
    return result


def train(connection: Connection, model: torch.nn.Module, loss_fn: Callable[..., Any], data: Any,
          optimizer: Optional[goblin_optim.Optimizer] = None, rounds: Optional[int] = None,
          batch_size: int = 32, micro_batch: Optional[int] = None,
          clip_grad_norm: Optional[float] = None,
          callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = True,
          resume: Optional[TrainResult] = None, timeout: Optional[float] = None,
          dropout_seed: int = 0, verification: str = "replicas",
          allow_nonfinite: bool = False) -> TrainResult:
    """See Client.train."""
    job = submit_train(connection, model, loss_fn, data, optimizer=optimizer, rounds=rounds,
                       batch_size=batch_size, micro_batch=micro_batch,
                       clip_grad_norm=clip_grad_norm, resume=resume, dropout_seed=dropout_seed,
                       verification=verification, progress=progress,
                       allow_nonfinite=allow_nonfinite)
    if progress:
        sys.stderr.write("goblin: training job %s (re-attach with client.fetch_train(%r, model))\n"
                         % (job, job))
    previous = resume.history if resume is not None else []
    result = fetch_train(connection, job, callback=callback, progress=progress, timeout=timeout)
    result.history = list(previous) + result.history
    return result


__all__ = ["Layout", "RoundRecord", "TrainResult", "TrainingContext", "TrainingError", "fetch_train",
           "round_plan_request", "submit_train", "train", "train_request"]
