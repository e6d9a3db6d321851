"""Indexing and shape ops of the numpy reference interpreter: gather, index_select, embedding,
one_hot, index_add, concat, slice and pad."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import numpy as np

from .common import Attrs, GraphError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .common import Array


def _dim(attrs: Attrs, rank: int, default: Optional[int] = None) -> int:
    dim = attrs.get("dim", default)
    return dim + max(rank, 1) if dim < 0 else dim


def _check_indices(index: ArrayLike, size: int, op: str) -> Array:
    flat = np.asarray(index).reshape(-1).astype(np.int64)
    bad = flat[(flat < 0) | (flat >= size)]
    if bad.size:
        raise GraphError("invalid_input", "%s: index %d is out of range for a dim of size %d"
                         % (op, int(bad[0]), size))
    return np.asarray(index).astype(np.int64)


def gather(x: Array, index: Array, attrs: Attrs) -> Array:
    dim = _dim(attrs, x.ndim)
    index = _check_indices(index, x.shape[dim] if x.ndim else 1, "gather")
    if x.ndim == 0:
        return x.copy()
    window = tuple(slice(None) if d == dim else slice(0, index.shape[d]) for d in range(x.ndim))
    return np.take_along_axis(x[window], index, axis=dim)


def _index_select(x: Array, index: Array, dim: int, op: str) -> Array:
    index = _check_indices(index, x.shape[dim] if x.ndim else 1, op)
    if x.ndim == 0:
        return x.copy()
    return np.take(x, index.reshape(-1), axis=dim)


def index_select(x: Array, index: Array, attrs: Attrs) -> Array:
    return _index_select(x, index, _dim(attrs, x.ndim), "index_select")


def embedding(weight: Array, ids: Array) -> Array:
    return _index_select(weight, ids, 0, "embedding").reshape(ids.shape + weight.shape[1:])


def concat(args: List[Array], attrs: Attrs) -> Array:
    return np.concatenate(args, axis=_dim(attrs, args[0].ndim, 0))


def one_hot(x: Array, attrs: Attrs) -> Array:
    classes = int(attrs["num_classes"])
    index = _check_indices(x, classes, "one_hot")
    return (index[..., None] == np.arange(classes)).astype(np.int64)


def index_add(x: Array, index: Array, source: Array, attrs: Attrs) -> Array:
    dim = _dim(attrs, x.ndim)
    index = _check_indices(index, x.shape[dim] if x.ndim else 1, "index_add").reshape(-1)
    alpha = attrs.get("alpha", 1)
    out = x.copy()
    if x.dtype.kind == "f":
        alpha = x.dtype.type(alpha)
    else:
        alpha = np.array(int(alpha), np.int64).astype(x.dtype)
    with np.errstate(all="ignore"):
        for j, target in enumerate(index.tolist()):  # index order is the accumulation order
            to = (slice(None),) * dim + (target,) if x.ndim else ()
            frm = (slice(None),) * dim + (j,) if x.ndim else ()
            term = source[frm] if (x.dtype.kind == "f" and alpha == 1) else alpha * source[frm]
            out[to] = (out[to] + term).astype(x.dtype)
    return out


def slice_along(x: Array, attrs: Attrs) -> Array:
    dim = _dim(attrs, x.ndim, 0)
    window = slice(attrs.get("start", 0), attrs.get("end", 2 ** 63 - 1), attrs.get("step", 1))
    return np.ascontiguousarray(x[(slice(None),) * dim + (window,)])


def pad(x: Array, attrs: Attrs) -> Array:
    pads = list(attrs["pads"])
    before = [0] * x.ndim
    after = [0] * x.ndim
    for i in range(len(pads) // 2):
        before[x.ndim - 1 - i], after[x.ndim - 1 - i] = pads[2 * i], pads[2 * i + 1]
    shape = [s + b + a for s, b, a in zip(x.shape, before, after)]
    value = attrs.get("value", 0)
    fill = x.dtype.type(value) if x.dtype.kind in "fb" else int(value)
    out = np.full(shape, fill, dtype=x.dtype)
    source, target = [], []
    for size, b, a in zip(x.shape, before, after):
        start, stop = max(-b, 0), size - max(-a, 0)  # negative pads crop the input
        stop = max(stop, start)
        source.append(slice(start, stop))
        target.append(slice(max(b, 0), max(b, 0) + stop - start))
    out[tuple(target)] = x[tuple(source)]
    return out
