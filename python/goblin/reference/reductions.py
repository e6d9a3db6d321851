"""Reductions of the numpy reference interpreter: sum/mean/amax/amin/prod/var over dims, the ops
along one dim (argmax, argmin, cumsum, softmax, log_softmax) and layer_norm with its backward."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Tuple

import numpy as np

from .common import Attrs, GraphError

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .common import Array


def _dims(attrs: Attrs, rank: int) -> Tuple[int, ...]:
    dims = list(attrs.get("dims", [])) or list(range(rank))
    return tuple(sorted(d % rank if rank else 0 for d in dims)) if rank else ()


def _accumulator(dtype: np.dtype[Any]) -> DTypeLike:
    return np.int64 if dtype == np.int32 else dtype


def reduce(name: str, x: Array, attrs: Attrs) -> Any:
    axis = _dims(attrs, x.ndim)
    keep = bool(attrs.get("keepdim", False))
    with np.errstate(all="ignore"):
        if name == "sum":
            return np.sum(x, axis=axis, keepdims=keep, dtype=_accumulator(x.dtype))
        if name == "prod":
            return np.prod(x, axis=axis, keepdims=keep, dtype=_accumulator(x.dtype))
        if name == "mean":
            return np.asarray(np.mean(x, axis=axis, keepdims=keep), dtype=x.dtype)
        if name == "amax":
            return np.max(x, axis=axis, keepdims=keep)
        if name == "amin":
            return np.min(x, axis=axis, keepdims=keep)
        count = int(np.prod([x.shape[d] for d in axis])) if x.ndim else 1
        mean = np.mean(x, axis=axis, keepdims=True)
        squares = np.sum((x - mean) * (x - mean), axis=axis, keepdims=keep)
        divisor = x.dtype.type(max(count - int(attrs.get("correction", 1)), 0))
        return np.asarray(squares / divisor, dtype=x.dtype)


def along(name: str, x: Array, attrs: Attrs) -> Array:
    keep = bool(attrs.get("keepdim", False))
    if name in ("argmax", "argmin"):
        fn = np.argmax if name == "argmax" else np.argmin
        if "dim" not in attrs:
            out = np.asarray(fn(x), np.int64)
            return out.reshape((1,) * x.ndim) if keep else out
        return np.asarray(fn(x, axis=attrs["dim"] if x.ndim else None, keepdims=keep), np.int64)
    axis = attrs["dim"] if x.ndim else None
    if name == "cumsum":
        return np.cumsum(x, axis=axis, dtype=_accumulator(x.dtype)).reshape(x.shape)
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
        out = np.exp(shifted) / total if name == "softmax" else shifted - np.log(total)
    return np.asarray(out, dtype=x.dtype)


def _sequential_sum(a: Array, axis: int) -> Array:
    """Σ in element order (as the C++ reference), not numpy's pairwise order."""
    if a.shape[axis] == 0:
        return np.zeros(np.delete(a.shape, axis), a.dtype)
    return np.take(np.cumsum(a, axis=axis, dtype=a.dtype), -1, axis=axis)


def _layer_norm_rows(x: Array, ndim: int, eps: float) -> Tuple[Array, Array, Array]:
    """x as rows of K normalised elements, with each row's mean and rstd (two passes, biased)."""
    if not math.isfinite(eps) or eps < 0:
        raise GraphError("invalid_input", "layer_norm: eps must be finite and ≥ 0")
    k = int(np.prod(x.shape[x.ndim - ndim:]))
    rows = x.reshape(-1, k)
    t = x.dtype.type
    mean = _sequential_sum(rows, 1) / t(k)
    centered = rows - mean[:, None]
    var = _sequential_sum(centered * centered, 1) / t(k)
    rstd = t(1) / np.sqrt(var + t(eps))
    return rows, mean[:, None], rstd[:, None]


def layer_norm(x: Array, weight: Array, bias: Array, attrs: Attrs) -> Array:
    rows, mean, rstd = _layer_norm_rows(x, attrs["normalized_ndim"], attrs.get("eps", 1e-5))
    w, b = weight.reshape(1, -1), bias.reshape(1, -1)
    with np.errstate(all="ignore"):
        return ((rows - mean) * rstd * w + b).reshape(x.shape).astype(x.dtype)


def layer_norm_backward(grad: Array, x: Array, weight: Array, attrs: Attrs) -> Array:
    rows, mean, rstd = _layer_norm_rows(x, attrs["normalized_ndim"], attrs.get("eps", 1e-5))
    g = grad.reshape(rows.shape)
    t = x.dtype.type
    with np.errstate(all="ignore"):
        xhat = (rows - mean) * rstd
        output = attrs["output"]
        if output == "bias":
            return _sequential_sum(g, 0).reshape(weight.shape)
        if output == "weight":
            return _sequential_sum(g * xhat, 0).reshape(weight.shape)
        dy = g * weight.reshape(1, -1)
        k = t(rows.shape[1])
        mean_dy = _sequential_sum(dy, 1)[:, None] / k
        mean_dy_xhat = _sequential_sum(dy * xhat, 1)[:, None] / k
        return ((dy - mean_dy - xhat * mean_dy_xhat) * rstd).reshape(x.shape).astype(x.dtype)
