"""Training a PyTorch model on the network: `Client.train` (docs/training.md).

Each round takes the next batch of the researcher's data, and the lab node runs the captured
training step, (params, x, y) → (loss, grads), on micro-batches: every micro-batch is a graph task
computed by two volunteers and verified like any graph task; the node averages the accepted losses
and gradients in float64 in a fixed order (weighted by micro-batch size). The client then clips the
gradients if asked and takes the optimizer step (goblin.optim, torch.optim's formulas) and the next
round starts from the new parameters.
"""

import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import optim as goblin_optim
from .capture import _torch
from .errors import GoblinError, InputError


class TrainingError(GoblinError):
    """A round failed (a non-finite loss, a job the node refused); `result` holds the rounds that
    completed, to resume from."""

    def __init__(self, message: str, result: "TrainResult"):
        super().__init__(message)
        self.result = result


@dataclass
class RoundRecord:
    """What one round did: its mean loss and the verification of its tasks."""
    round: int
    loss: float
    samples: int
    tasks: int
    verified_tasks: int
    rejected: int
    node_audited: int
    node_decided: int
    grad_norm: float
    seconds: float
    job: str


@dataclass
class TrainResult:
    """The trained parameters and what each round did. `state_dict` is the model's state dict
    with the trained parameters (torch tensors); pass the result as `resume=` to continue."""
    state_dict: Dict[str, Any]
    history: List[RoundRecord]
    params: Dict[str, np.ndarray]
    optimizer: goblin_optim.Optimizer
    rounds: int = 0
    samples_seen: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def losses(self) -> List[float]:
        return [record.loss for record in self.history]


def _arrays(data) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """(x, y) as numpy arrays when `data` is a pair of arrays with a leading sample dim."""
    if isinstance(data, (tuple, list)) and len(data) == 2 and all(
            hasattr(part, "shape") and len(part.shape) >= 1 for part in data):
        x, y = (np.ascontiguousarray(part.detach().cpu().numpy() if hasattr(part, "detach")
                                     else np.asarray(part)) for part in data)
        if x.shape[0] != y.shape[0]:
            raise InputError("data has %d inputs and %d targets; they pair up by their first dim"
                             % (x.shape[0], y.shape[0]))
        return x, y
    return None


def _batches(data, batch_size: int, start: int) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """The batches of `data` from sample `start` on: consecutive samples of arrays in the
    researcher's order (wrapping around at the end), or the batches of an iterable as they come."""
    pair = _arrays(data)
    if pair is not None:
        x, y = pair
        count = x.shape[0]
        if count < batch_size:
            raise InputError("data has %d samples, fewer than one batch of %d"
                             % (count, batch_size))
        position = start
        while True:
            rows = np.arange(position, position + batch_size) % count
            yield x[rows], y[rows]
            position += batch_size
    for batch in data:
        pair = _arrays(batch)
        if pair is None:
            raise InputError("each batch of an iterable is a pair (x, y) of arrays")
        if pair[0].shape[0] != batch_size:
            raise InputError("a streamed batch has %d samples, batch_size is %d"
                             % (pair[0].shape[0], batch_size))
        yield pair


def _step_function(torch, model, loss_fn, names: Sequence[str]):
    """(params..., x, y) → (loss, grads...), the program a round's tasks run."""
    functional_call = torch.nn.utils.stateless.functional_call

    def step(*args):
        params = {name: p.detach().requires_grad_(True) for name, p in zip(names, args)}
        x, y = args[len(names):]
        loss = loss_fn(functional_call(model, params, (x,)), y)
        return (loss, *torch.autograd.grad(loss, list(params.values())))

    return step


def _check_sizes(batch_size, micro_batch, rounds):
    for name, value in (("batch_size", batch_size), ("micro_batch", micro_batch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError("%s must be a positive integer, not %r" % (name, value))
    if batch_size % micro_batch:
        raise InputError("micro_batch %d does not divide batch_size %d" % (micro_batch, batch_size))
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer))
                               or rounds < 0):
        raise InputError("rounds must be a non-negative integer, not %r" % (rounds,))


def _torch_value(torch, array):
    return torch.from_numpy(np.array(array, copy=True))


def _result(torch, model, names, params, optimizer, history, rounds, samples):
    state = {key: value.detach().clone() for key, value in model.state_dict().items()}
    for name in names:
        state[name] = _torch_value(torch, params[name])
    return TrainResult(state, list(history), {n: params[n].copy() for n in names}, optimizer,
                       rounds, samples)


def train(client, model, loss_fn: Callable, data, optimizer: Optional[goblin_optim.Optimizer] = None,
          rounds: Optional[int] = None, batch_size: int = 32, micro_batch: Optional[int] = None,
          clip_grad_norm: Optional[float] = None,
          callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = True,
          resume: Optional[TrainResult] = None, timeout: Optional[float] = None) -> TrainResult:
    """See Client.train."""
    torch = _torch()
    from .capture import capture

    micro = batch_size if micro_batch is None else micro_batch
    _check_sizes(batch_size, micro, rounds)
    if rounds is None and _arrays(data) is not None:
        raise InputError("rounds is needed when data is arrays (it is optional for an iterable "
                         "of batches, which then trains until it ends)")
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    if not names:
        raise InputError("the model has no parameter that requires a gradient")
    if resume is not None:
        if sorted(resume.params) != sorted(names):
            raise InputError("resume= comes from a model with other parameters")
        params = {n: np.array(resume.params[n], dtype=np.float32, copy=True) for n in names}
        optimizer = resume.optimizer
        history, done, seen = list(resume.history), resume.rounds, resume.samples_seen
    else:
        params = {n: p.detach().cpu().numpy().astype(np.float32, copy=True)
                  for n, p in model.named_parameters() if p.requires_grad}
        optimizer = optimizer if optimizer is not None else goblin_optim.AdamW()
        history, done, seen = [], 0, 0
    if not isinstance(optimizer, goblin_optim.Optimizer):
        raise InputError("optimizer is a goblin.optim optimizer (SGD, Adam, AdamW), not %s"
                         % type(optimizer).__name__)
    for name, p in model.named_parameters():
        if p.requires_grad and p.dtype != torch.float32:
            raise InputError("parameter %s is %s; training runs in float32" % (name, p.dtype))

    batches = _batches(data, batch_size, seen)
    step = _step_function(torch, model, loss_fn, names)
    captured = None
    graph_inputs = len(names) + 2
    split = {"inputs": [None] * len(names) + [0, 0], "outputs": ["mean"] * (1 + len(names))}
    stream = sys.stderr
    round_index = done
    while rounds is None or round_index < done + rounds:
        try:
            x, y = next(batches)
        except StopIteration:
            break
        started = time.monotonic()
        if captured is None:
            example = [_torch_value(torch, params[n]) for n in names] + [
                _torch_value(torch, x[:micro]), _torch_value(torch, y[:micro])]
            captured = capture(step, *example)
            if len(captured.graph.inputs) != graph_inputs:
                raise InputError("the training step did not capture as (params, x, y)")
        inputs = [params[n] for n in names] + [x, y]
        try:
            outputs = client.run(captured, inputs, batch=split, micro_batch=micro,
                                 timeout=timeout)
        except GoblinError as error:
            raise TrainingError("round %d: %s" % (round_index, error),
                                _result(torch, model, names, params, optimizer, history,
                                        round_index, seen)) from error
        loss, grads = float(outputs[0]), [np.array(g, dtype=np.float32) for g in outputs[1:]]
        if not math.isfinite(loss) or not all(np.isfinite(g).all() for g in grads):
            raise TrainingError(
                "round %d: the loss is %r%s; nothing was applied (resume from error.result "
                "with a smaller learning rate or other data)"
                % (round_index, loss, "" if math.isfinite(loss) else "",),
                _result(torch, model, names, params, optimizer, history, round_index, seen))
        norm = goblin_optim.clip_grad_norm(grads, clip_grad_norm) if clip_grad_norm is not None \
            else goblin_optim.grad_norm(grads)
        optimizer.step([params[n] for n in names], grads)
        summary = client.last_summary or {}
        verdicts = summary.get("verdicts", {})
        record = RoundRecord(round=round_index, loss=loss, samples=batch_size,
                             tasks=int(summary.get("tasks", 0)),
                             verified_tasks=int(summary.get("tasks", 0)),
                             rejected=int(verdicts.get("rejected", 0)),
                             node_audited=int(summary.get("node_recomputed", 0)),
                             node_decided=int(summary.get("node_tiebreaks", 0)),
                             grad_norm=norm, seconds=time.monotonic() - started,
                             job=str(client.last_job))
        history.append(record)
        round_index += 1
        seen += batch_size
        if progress:
            stream.write("round %d: loss %.6g, %d tasks verified, %d rejected, %.2f s\n"
                         % (record.round, record.loss, record.verified_tasks, record.rejected,
                            record.seconds))
            stream.flush()
        if callback is not None and callback(record) is False:
            break
    return _result(torch, model, names, params, optimizer, history, round_index, seen)


__all__ = ["RoundRecord", "TrainResult", "TrainingError", "train"]
