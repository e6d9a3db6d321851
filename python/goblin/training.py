"""Training a PyTorch model on the network: `Client.train` (docs/training.md).

Each round takes the next batch of the researcher's data, and the lab node runs the captured
training step, (params, x, y) → (loss, grads), on micro-batches: every micro-batch is a graph task
computed by two volunteers and verified like any graph task; the node averages the accepted losses
and gradients in float64 in a fixed order (weighted by micro-batch size). The client then clips the
gradients if asked and takes the optimizer step (goblin.optim, torch.optim's formulas), and the
next round starts from the new parameters.
"""

import math
import os
import sys
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from . import optim as goblin_optim
from .capture import _torch
from .errors import GoblinError, InputError, RemoteError
from .training_checkpoint import load_checkpoint, save_checkpoint
from .training_result import RoundRecord, TrainingError, TrainResult


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
    researcher's order (wrapping around at the end), or the batches of an iterable as they come
    (a resumed run skips the `start` samples it already trained on)."""
    pair = _arrays(data)
    if pair is not None:
        x, y = pair
        if x.shape[0] < batch_size:
            raise InputError("data has %d samples, fewer than one batch of %d"
                             % (x.shape[0], batch_size))
        position = start
        while True:
            rows = np.arange(position, position + batch_size) % x.shape[0]
            yield x[rows], y[rows]
            position += batch_size
    skipped = 0
    for batch in data:
        pair = _arrays(batch)
        if pair is None:
            raise InputError("each batch of an iterable is a pair (x, y) of arrays")
        if pair[0].shape[0] != batch_size:
            raise InputError("a streamed batch has %d samples, batch_size is %d"
                             % (pair[0].shape[0], batch_size))
        if skipped < start:
            skipped += batch_size
            continue
        yield pair


def _check_sizes(batch_size, micro_batch, rounds) -> None:
    for name, value in (("batch_size", batch_size), ("micro_batch", micro_batch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError("%s must be a positive integer, not %r" % (name, value))
    if batch_size % micro_batch:
        raise InputError("micro_batch %d does not divide batch_size %d" % (micro_batch, batch_size))
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer))
                               or rounds < 0):
        raise InputError("rounds must be a non-negative integer, not %r" % (rounds,))


def _resumed(resume, optimizer) -> Optional[TrainResult]:
    if isinstance(resume, (str, os.PathLike)):
        if not isinstance(optimizer, goblin_optim.Optimizer):
            raise InputError("resuming from a checkpoint file needs optimizer= (the same kind "
                             "and settings as the run that saved it)")
        return load_checkpoint(os.fspath(resume), optimizer)
    if resume is not None and not isinstance(resume, TrainResult):
        raise InputError("resume= is a TrainResult or a checkpoint file's path")
    return resume


class _Run:
    """One call of train(): the parameters, optimizer and history, round after round."""

    def __init__(self, client, model, loss_fn, optimizer, resume: Optional[TrainResult],
                 batch_size: int, micro_batch: int, timeout, checkpoint):
        self.torch = _torch()
        self.client, self.model, self.loss_fn = client, model, loss_fn
        self.batch_size, self.micro_batch = batch_size, micro_batch
        self.timeout, self.checkpoint = timeout, checkpoint
        self.names = [name for name, p in model.named_parameters() if p.requires_grad]
        if not self.names:
            raise InputError("the model has no parameter that requires a gradient")
        for name, p in model.named_parameters():
            if p.requires_grad and p.dtype != self.torch.float32:
                raise InputError("parameter %s is %s; training runs in float32" % (name, p.dtype))
        if resume is not None:
            if sorted(resume.params) != sorted(self.names):
                raise InputError("resume= comes from a model with other parameters")
            self.params = {n: np.array(resume.params[n], dtype=np.float32) for n in self.names}
            self.optimizer = resume.optimizer
            self.history = list(resume.history)
            self.round, self.seen, self.pending = resume.rounds, resume.samples_seen, resume.pending
        else:
            self.params = {n: p.detach().cpu().numpy().astype(np.float32, copy=True)
                           for n, p in model.named_parameters() if p.requires_grad}
            self.optimizer = optimizer if optimizer is not None else goblin_optim.AdamW()
            self.history, self.round, self.seen, self.pending = [], 0, 0, None
        if not isinstance(self.optimizer, goblin_optim.Optimizer):
            raise InputError("optimizer is a goblin.optim optimizer (SGD, Adam, AdamW), not %s"
                             % type(self.optimizer).__name__)
        self.captured = None
        self.split = {"inputs": [None] * len(self.names) + [0, 0],
                      "outputs": ["mean"] * (1 + len(self.names))}

    def result(self, pending=None) -> TrainResult:
        state = {key: value.detach().clone() for key, value in self.model.state_dict().items()}
        for name in self.names:
            state[name] = self.torch.from_numpy(self.params[name].copy())
        return TrainResult(state, list(self.history),
                           {n: self.params[n].copy() for n in self.names}, self.optimizer,
                           self.round, self.seen, pending)

    def _save(self, pending=None) -> None:
        if self.checkpoint:
            save_checkpoint(self.checkpoint, self.result(pending))

    def _failed(self, error, pending=None) -> TrainingError:
        text = "round %d: %s" % (self.round, error)
        if pending:
            text += " (its job %s stays at the node: resume from error.result)" % pending[1]
        return TrainingError(text, self.result(pending))

    def _capture(self, x, y) -> None:
        from .capture import capture
        torch, names, model, loss_fn = self.torch, self.names, self.model, self.loss_fn
        functional_call = torch.nn.utils.stateless.functional_call

        def step(*args):  # (params..., x, y) → (loss, grads...)
            params = {name: p.detach().requires_grad_(True) for name, p in zip(names, args)}
            loss = loss_fn(functional_call(model, params, (args[-2],)), args[-1])
            return (loss, *torch.autograd.grad(loss, list(params.values())))

        m = self.micro_batch
        example = [torch.from_numpy(self.params[n].copy()) for n in names] + [
            torch.from_numpy(np.array(x[:m])), torch.from_numpy(np.array(y[:m]))]
        self.captured = capture(step, *example)

    def _reattached(self) -> Optional[List[np.ndarray]]:
        """The outputs of this round's job submitted before a crash; None when there is none or
        the node no longer has it (purged, or it never became durable)."""
        if not self.pending or self.pending[0] != self.round:
            return None
        try:
            return self.client.fetch_outputs(self.pending[1], timeout=self.timeout)
        except RemoteError as error:
            if error.code != "not_found":
                raise self._failed(error, self.pending) from error
            return None
        except GoblinError as error:
            raise self._failed(error, self.pending) from error

    def _outputs(self, x, y) -> List[np.ndarray]:
        outputs = self._reattached()
        if outputs is not None:
            return outputs
        inputs = [self.params[n] for n in self.names] + [x, y]
        try:
            job = self.client.submit_graph(self.captured, inputs, batch=self.split,
                                           micro_batch=self.micro_batch)
        except GoblinError as error:
            raise self._failed(error) from error
        pending = (self.round, job)  # durable at the node from here on
        self._save(pending)
        try:
            return self.client.fetch_outputs(job, timeout=self.timeout)
        except GoblinError as error:
            raise self._failed(error, pending) from error

    def train_round(self, x, y, clip_grad_norm) -> RoundRecord:
        started = time.monotonic()
        if self.captured is None:
            self._capture(x, y)
        outputs = self._outputs(x, y)
        self.pending = None
        loss, grads = float(outputs[0]), [np.array(g, dtype=np.float32) for g in outputs[1:]]
        if not math.isfinite(loss) or not all(np.isfinite(g).all() for g in grads):
            what = "the loss is %r" % loss if not math.isfinite(loss) else \
                "a gradient is not finite (the loss is %r)" % loss
            raise TrainingError("round %d: %s; nothing was applied" % (self.round, what),
                                self.result())
        norm = goblin_optim.clip_grad_norm(grads, clip_grad_norm) \
            if clip_grad_norm is not None else goblin_optim.grad_norm(grads)
        self.optimizer.step([self.params[n] for n in self.names], grads)
        summary = self.client.last_summary or {}
        tasks = int(summary.get("tasks", 0))
        record = RoundRecord(round=self.round, loss=loss, samples=self.batch_size, tasks=tasks,
                             verified_tasks=tasks,
                             rejected=int(summary.get("verdicts", {}).get("rejected", 0)),
                             node_audited=int(summary.get("node_recomputed", 0)),
                             node_decided=int(summary.get("node_tiebreaks", 0)),
                             grad_norm=norm, seconds=time.monotonic() - started,
                             job=str(self.client.last_job))
        self.history.append(record)
        self.round += 1
        self.seen += self.batch_size
        self._save()
        return record


def train(client, model, loss_fn: Callable, data, optimizer: Optional[goblin_optim.Optimizer] = None,
          rounds: Optional[int] = None, batch_size: int = 32, micro_batch: Optional[int] = None,
          clip_grad_norm: Optional[float] = None,
          callback: Optional[Callable[[RoundRecord], Any]] = None, progress: bool = True,
          resume=None, timeout: Optional[float] = None,
          checkpoint: Optional[str] = None) -> TrainResult:
    """See Client.train."""
    micro = batch_size if micro_batch is None else micro_batch
    _check_sizes(batch_size, micro, rounds)
    if rounds is None and _arrays(data) is not None:
        raise InputError("rounds is needed when data is arrays (it is optional for an iterable "
                         "of batches, which then trains until it ends)")
    if isinstance(resume, (str, os.PathLike)) and checkpoint is None:
        checkpoint = os.fspath(resume)  # a run resumed from its file keeps that file current
    run = _Run(client, model, loss_fn, optimizer, _resumed(resume, optimizer), batch_size, micro,
               timeout, checkpoint)
    last = None if rounds is None else run.round + rounds
    batches = _batches(data, batch_size, run.seen)
    while last is None or run.round < last:
        batch = next(batches, None)
        if batch is None:
            break
        record = run.train_round(*batch, clip_grad_norm)
        if progress:
            sys.stderr.write("round %d: loss %.6g, %d tasks verified, %d rejected, %.2f s\n"
                             % (record.round, record.loss, record.verified_tasks,
                                record.rejected, record.seconds))
            sys.stderr.flush()
        if callback is not None and callback(record) is False:
            break
    return run.result()


__all__ = ["RoundRecord", "TrainResult", "TrainingError", "load_checkpoint", "save_checkpoint",
           "train"]
