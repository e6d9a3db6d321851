"""Optimizers for `Client.train`, with `torch.optim`'s formulas (its single-tensor code paths).

The lab node takes a training job's steps with the same formulas (app/labnode/train/
optimizer_step.cpp) from the settings `wire()` describes; `step()` here is their reference in
numpy, tested against torch.optim.

    opt = goblin.optim.AdamW(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    opt = goblin.optim.SGD(lr=lambda step: 0.1 * 0.9 ** step, momentum=0.9, nesterov=True)

An optimizer is a description plus its state (step count, moment buffers per parameter); it is
not bound to a model: `step(params, grads)` updates float32 numpy arrays in place. `lr` is a number
or a schedule: a callable taking the number of steps already taken (0 for the first) and returning
the rate, like `torch.optim.lr_scheduler.LambdaLR`'s factor times a base rate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import InputError

if TYPE_CHECKING:
    from numpy.typing import NDArray

Schedule = Union[float, Callable[[int], float]]


def _number(value: object, name: str, low: float = 0.0, below: Optional[float] = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise InputError("%s must be a number, not %r" % (name, value))
    number = float(value)
    if not math.isfinite(number) or number < low or (below is not None and number >= below):
        bound = "[%g, %g)" % (low, below) if below is not None else ">= %g" % low
        raise InputError("%s must be %s, not %r" % (name, bound, value))
    return number


class Optimizer:
    """The shared part: the learning rate (or schedule), the step count and per-parameter state."""

    def __init__(self, lr: Schedule, weight_decay: float):
        if not callable(lr):
            _number(lr, "lr")
        self.lr = lr
        self.weight_decay = _number(weight_decay, "weight_decay")
        self.steps = 0
        self.state: List[Dict[str, NDArray[Any]]] = []

    def rate(self) -> float:
        """The learning rate of the next step."""
        return _number(self.lr(self.steps), "lr(%d)" % self.steps) if callable(self.lr) \
            else float(self.lr)

    def rates(self, first_step: int, count: int) -> List[float]:
        """The learning rates of steps first_step … first_step + count - 1."""
        if not callable(self.lr):
            return [float(self.lr)] * count
        return [_number(self.lr(step), "lr(%d)" % step) for step in range(first_step,
                                                                            first_step + count)]

    def wire(self, first_step: int, count: int) -> Dict[str, Any]:
        """The optimizer as a training job tells the node (docs/protocol.md, "Training jobs")."""
        settings = {"kind": type(self).__name__.lower(), "weight_decay": self.weight_decay,
                    "lr": self.rates(first_step, count)}
        settings.update(self._settings())
        return settings

    def _settings(self) -> Dict[str, Any]:
        raise NotImplementedError

    def step(self, params: Sequence[NDArray[Any]], grads: Sequence[NDArray[Any]]) -> None:
        """Updates `params` (float32 arrays) in place from their gradients."""
        if len(params) != len(grads):
            raise InputError("%d parameters, %d gradients" % (len(params), len(grads)))
        if not self.state:
            self.state = [{} for _ in params]
        lr = np.float32(self.rate())
        for param, grad, state in zip(params, grads, self.state):
            self._update(param, np.asarray(grad, dtype=param.dtype), state, lr)
        self.steps += 1

    def _update(self, param: NDArray[Any], grad: NDArray[Any],
                state: Dict[str, NDArray[Any]], lr: np.float32) -> None:
        raise NotImplementedError

    def state_dict(self) -> Dict[str, Any]:
        """A copy of the state, to resume from (`load_state_dict`)."""
        return {"steps": self.steps,
                "state": [{k: v.copy() for k, v in s.items()} for s in self.state]}

    def load_state_dict(self, saved: Dict[str, Any]) -> None:
        self.steps = int(saved["steps"])
        self.state = [{k: np.array(v, copy=True) for k, v in s.items()} for s in saved["state"]]

    def __repr__(self) -> str:
        fields = ", ".join("%s=%r" % (k, v) for k, v in vars(self).items()
                           if k not in ("state", "steps"))
        return "%s(%s)" % (type(self).__name__, fields)


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, Nesterov momentum, L2 weight decay."""

    def __init__(self, lr: Schedule = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(lr, weight_decay)
        self.momentum = _number(momentum, "momentum")
        self.dampening = _number(dampening, "dampening")
        self.nesterov = bool(nesterov)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise InputError("Nesterov momentum requires a momentum and zero dampening")

    def _settings(self) -> Dict[str, Any]:
        return {"momentum": self.momentum, "dampening": self.dampening, "nesterov": self.nesterov}

    def _update(self, param: NDArray[Any], grad: NDArray[Any],
                state: Dict[str, NDArray[Any]], lr: np.float32) -> None:
        f32 = param.dtype.type
        d_p = grad + f32(self.weight_decay) * param if self.weight_decay else grad
        if self.momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = d_p.copy()
            else:
                buf *= f32(self.momentum)
                buf += f32(1 - self.dampening) * d_p
            d_p = d_p + f32(self.momentum) * buf if self.nesterov else buf
        param -= lr * d_p


class Adam(Optimizer):
    """torch.optim.Adam (L2 weight decay added to the gradient)."""

    decoupled = False

    def __init__(self, lr: Schedule = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(lr, weight_decay)
        if len(tuple(betas)) != 2:
            raise InputError("betas is a pair (beta1, beta2)")
        self.betas = (_number(betas[0], "beta1", below=1.0), _number(betas[1], "beta2", below=1.0))
        self.eps = _number(eps, "eps")

    def _settings(self) -> Dict[str, Any]:
        return {"betas": list(self.betas), "eps": self.eps}

    def _update(self, param: NDArray[Any], grad: NDArray[Any],
                state: Dict[str, NDArray[Any]], lr: np.float32) -> None:
        f32 = param.dtype.type
        beta1, beta2 = self.betas
        if self.decoupled:
            param *= f32(1 - float(lr) * self.weight_decay)
        elif self.weight_decay:
            grad = grad + f32(self.weight_decay) * param
        if not state:
            state["exp_avg"] = np.zeros_like(param)
            state["exp_avg_sq"] = np.zeros_like(param)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg *= f32(beta1)
        exp_avg += f32(1 - beta1) * grad
        exp_avg_sq *= f32(beta2)
        exp_avg_sq += f32(1 - beta2) * (grad * grad)
        step = self.steps + 1
        step_size = float(lr) / (1 - beta1 ** step)
        denom = np.sqrt(exp_avg_sq) / f32(math.sqrt(1 - beta2 ** step)) + f32(self.eps)
        param -= f32(step_size) * (exp_avg / denom)


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (param *= 1 - lr·weight_decay)."""

    decoupled = True

    def __init__(self, lr: Schedule = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(lr, betas, eps, weight_decay)


def clip_grad_norm(grads: Sequence[NDArray[Any]], max_norm: float) -> float:
    """torch.nn.utils.clip_grad_norm_ (2-norm): scales `grads` in place when their total norm is
    over `max_norm`, and returns the total norm before clipping."""
    norms = np.array([np.linalg.norm(g.ravel()) for g in grads], dtype=np.float32)
    total = np.float32(np.linalg.norm(norms))
    coefficient = min(np.float32(max_norm) / (total + np.float32(1e-6)), np.float32(1.0))
    for g in grads:
        g *= np.float32(coefficient)
    return float(total)


def grad_norm(grads: Sequence[NDArray[Any]]) -> float:
    """The total 2-norm of the gradients, in float64."""
    return float(math.sqrt(sum(float(np.dot(g.ravel().astype(np.float64),
                                            g.ravel().astype(np.float64))) for g in grads)))


__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "clip_grad_norm", "grad_norm"]
