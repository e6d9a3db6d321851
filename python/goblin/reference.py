"""Local numpy reference interpreter of catalog graphs: the semantics of docs/ops.md, used to check a
built or captured graph before upload and to cross-check the C++ reference executor through the
shared vectors in tests/vectors/graphs/.

    outputs = goblin.reference.run(graph, [x])   # graph: graph.Graph, dict or JSON text
"""

from __future__ import annotations

import json
import math
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple,
                    Union)

import numpy as np

from .graph import CATALOG_VERSION, DTYPES, OPS, Graph, arity_accepts, tensor_from_json

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

    Array = NDArray[Any]

Attrs = Dict[str, Any]


class GraphError(ValueError):
    """A graph the interpreter refuses; ``code`` is the wire error code ("invalid_input", …)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__("%s: %s" % (code, message))
        self.code = code


def _float_floor_divide(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        mod = np.fmod(a, b)
        div = (a - mod) / b
        div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - a.dtype.type(1), div)
        floored = np.floor(div)
        floored = np.where(div - floored > a.dtype.type(0.5), floored + a.dtype.type(1), floored)
        zero = np.copysign(np.zeros_like(div), a / b)
        out = np.where(div == 0, zero, floored)
        return np.where(b == 0, a / b, out).astype(a.dtype)


def _float_remainder(a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        mod = np.fmod(a, b)
        return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod).astype(a.dtype)


def _int_division(name: str, a: Array, b: Array) -> Array:
    if np.any(b == 0):
        raise GraphError("invalid_input", "%s: integer division by zero" % name)
    a, b = np.broadcast_arrays(a, b)
    minus_one = b == -1
    safe_b = np.where(minus_one, 1, b)
    with np.errstate(all="ignore"):
        if name == "floor_divide":
            return np.where(minus_one, np.negative(a), np.floor_divide(a, safe_b)).astype(a.dtype)
        return np.where(minus_one, 0, np.remainder(a, safe_b)).astype(a.dtype)


def _map_double(fn: Callable[[float], float], x: Array) -> Array:
    out = np.array([fn(v) for v in x.astype(np.float64).reshape(-1).tolist()], dtype=np.float64)
    return out.reshape(x.shape).astype(x.dtype)


def _lgamma(v: float) -> float:
    if math.isnan(v) or math.isinf(v):
        return v if math.isnan(v) else math.inf
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _gelu(x: Array, form: str) -> Array:
    t = x.dtype.type
    if form == "tanh":
        inner = t(0.7978845608028654) * (x + t(0.044715) * x * x * x)
        return (t(0.5) * x * (t(1) + np.tanh(inner))).astype(x.dtype)
    return (t(0.5) * x * (t(1) + _map_double(math.erf, x * t(0.7071067811865476)))).astype(x.dtype)


# The dtypes each elementwise op takes, as lib/core/src/ops/infer_elementwise.cpp decides:
# float-only ops, integer-or-bool ops, ops on any dtype; every other one takes numeric (not bool).
FLOAT_ONLY = {"div", "pow", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "lgamma",
              "gelu"}
INTEGER_OR_BOOL = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"}
ANY_DTYPE = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
             "logical_not", "isnan"}


def _check_kind(name: str, dtype: np.dtype[Any]) -> None:
    if name in ANY_DTYPE:
        return
    if name in FLOAT_ONLY:
        ok, wanted = dtype.kind == "f", "a floating-point dtype"
    elif name in INTEGER_OR_BOOL:
        ok, wanted = dtype.kind in "iub", "an integer or bool dtype"
    else:
        ok, wanted = dtype.kind != "b", "a numeric dtype (f32, f64, i32, i64)"
    if not ok:
        raise GraphError("unsupported_dtype", "%s takes %s, not %s" % (name, wanted, dtype))


def _binary(name: str, a: Array, b: Array) -> Array:
    if a.dtype != b.dtype:
        raise GraphError("unsupported_dtype", "%s: inputs have different dtypes" % name)
    _check_kind(name, a.dtype)
    if name in ("floor_divide", "remainder") and a.dtype.kind in "iu":
        return _int_division(name, a, b)
    table: Dict[str, Callable[..., Any]] = {
        "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
        "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
        "floor_divide": _float_floor_divide, "remainder": _float_remainder,
        "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
        "logical_or": np.logical_or, "logical_xor": np.logical_xor,
        "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    }
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        out = table[name](a, b)
    return np.asarray(out, dtype=np.bool_ if out.dtype == np.bool_ else a.dtype)


def _unary(name: str, x: Array, attrs: Attrs) -> Array:
    _check_kind(name, x.dtype)
    t = x.dtype.type
    with np.errstate(all="ignore"):
        if name == "neg":
            return np.negative(x)
        if name == "abs":
            return np.abs(x)
        if name == "relu":
            return np.where(np.isnan(x), x, np.maximum(x, t(0))) if x.dtype.kind == "f" \
                else np.maximum(x, t(0))
        if name == "logical_not":
            return np.logical_not(x)
        if name == "bitwise_not":
            return np.invert(x)
        if name == "isnan":
            return np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, np.bool_)
        simple: Dict[str, Callable[[Array], Any]] = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
                  "rsqrt": lambda v: t(1) / np.sqrt(v),
                  "sigmoid": lambda v: t(1) / (t(1) + np.exp(-v)),
                  "erf": lambda v: _map_double(math.erf, v),
                  "lgamma": lambda v: _map_double(_lgamma, v),
                  "gelu": lambda v: _gelu(v, attrs.get("approximate", "none"))}
        return np.asarray(simple[name](x), dtype=x.dtype)


def _dims(attrs: Attrs, rank: int) -> Tuple[int, ...]:
    dims = list(attrs.get("dims", [])) or list(range(rank))
    return tuple(sorted(d % rank if rank else 0 for d in dims)) if rank else ()


def _accumulator(dtype: np.dtype[Any]) -> DTypeLike:
    return np.int64 if dtype == np.int32 else dtype


def _reduce(name: str, x: Array, attrs: Attrs) -> Any:
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


def _along(name: str, x: Array, attrs: Attrs) -> Array:
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


def _cast(x: Array, dtype: str) -> Array:
    target: np.dtype[Any] = np.dtype(DTYPES[dtype])
    if x.dtype.kind == "f" and target.kind == "i":
        info = np.iinfo(target)
        with np.errstate(all="ignore"):
            clean = np.where(np.isnan(x), 0, x).astype(np.float64)
            clipped = np.clip(np.trunc(clean), float(info.min), float(info.max))
        out = np.where(clipped >= float(info.max), info.max, np.where(
            clipped <= float(info.min), info.min, clipped.astype(np.int64)))
        return out.astype(target)
    return x.astype(target)


def _clamp(x: Array, attrs: Attrs) -> Array:
    out = x
    if attrs.get("min") is not None:
        out = np.where(out < x.dtype.type(attrs["min"]), x.dtype.type(attrs["min"]), out)
    if attrs.get("max") is not None:
        out = np.where(out > x.dtype.type(attrs["max"]), x.dtype.type(attrs["max"]), out)
    return out.astype(x.dtype)


# ---- catalog 3 ------------------------------------------------------------------------------

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


def _gather(x: Array, index: Array, attrs: Attrs) -> Array:
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


def _one_hot(x: Array, attrs: Attrs) -> Array:
    classes = int(attrs["num_classes"])
    index = _check_indices(x, classes, "one_hot")
    return (index[..., None] == np.arange(classes)).astype(np.int64)


def _index_add(x: Array, index: Array, source: Array, attrs: Attrs) -> Array:
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


def _layer_norm(x: Array, weight: Array, bias: Array, attrs: Attrs) -> Array:
    rows, mean, rstd = _layer_norm_rows(x, attrs["normalized_ndim"], attrs.get("eps", 1e-5))
    w, b = weight.reshape(1, -1), bias.reshape(1, -1)
    with np.errstate(all="ignore"):
        return ((rows - mean) * rstd * w + b).reshape(x.shape).astype(x.dtype)


def _layer_norm_backward(grad: Array, x: Array, weight: Array, attrs: Attrs) -> Array:
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


def _slice(x: Array, attrs: Attrs) -> Array:
    dim = _dim(attrs, x.ndim, 0)
    window = slice(attrs.get("start", 0), attrs.get("end", 2 ** 63 - 1), attrs.get("step", 1))
    return np.ascontiguousarray(x[(slice(None),) * dim + (window,)])


def _pad(x: Array, attrs: Attrs) -> Array:
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


def _pair(attrs: Attrs, name: str, default: Sequence[int]) -> List[int]:
    value = list(attrs.get(name, []))
    return value if value else list(default)


def _conv_geometry(attrs: Attrs) -> Tuple[List[int], List[int], List[int], int]:
    return (_pair(attrs, "stride", [1, 1]), _pair(attrs, "padding", [0, 0]),
            _pair(attrs, "dilation", [1, 1]), int(attrs.get("groups", 1)))


def _taps(out_size: int, stride: int, pad: int, dilation: int, tap: int,
          size: int) -> Tuple[Array, Array]:
    """Input positions read by kernel tap `tap` for every output position, and which are inside."""
    positions = np.arange(out_size) * stride - pad + tap * dilation
    return np.clip(positions, 0, size - 1), (positions >= 0) & (positions < size)


def _conv2d(x: Array, w: Array, attrs: Attrs,
            out_hw: Optional[Sequence[int]] = None) -> Array:
    (sy, sx), (py, px), (dy, dx), groups = _conv_geometry(attrs)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = out_hw[0] if out_hw else (h + 2 * py - dy * (kh - 1) - 1) // sy + 1
    ow = out_hw[1] if out_hw else (wd + 2 * px - dx * (kw - 1) - 1) // sx + 1
    og = o // groups if groups else 0
    out = np.zeros((n, o, oh, ow), x.dtype)
    with np.errstate(all="ignore"):
        for g in range(groups):
            outs = slice(g * og, (g + 1) * og)
            for ch in range(cg):  # accumulation order c, kh, kw (as the C++ reference)
                for ky in range(kh):
                    iy, vy = _taps(oh, sy, py, dy, ky, h)
                    for kx in range(kw):
                        ix, vx = _taps(ow, sx, px, dx, kx, wd)
                        patch = x[:, g * cg + ch][:, iy][:, :, ix]
                        term = patch[:, None] * w[outs, ch, ky, kx][None, :, None, None]
                        valid = (vy[:, None] & vx[None, :])[None, None]
                        out[:, outs] = np.where(valid, out[:, outs] + term, out[:, outs])
    return out


def _conv2d_input_grad(grad: Array, w: Array, attrs: Attrs) -> Array:
    (sy, sx), (py, px), (dy, dx), groups = _conv_geometry(attrs)
    n, c, h, wd = attrs["input_shape"]
    o, cg, kh, kw = w.shape
    _, _, oh, ow = grad.shape
    og = o // groups
    out = np.zeros((n, c, h, wd), grad.dtype)
    with np.errstate(all="ignore"):
        for g in range(groups):
            chans = slice(g * cg, (g + 1) * cg)
            for j in range(og):  # accumulation order o, kh, kw
                oc = g * og + j
                for ky in range(kh):
                    shifted = np.arange(h) + py - ky * dy
                    vy = (shifted >= 0) & (shifted % sy == 0) & (shifted // sy < oh)
                    oy = np.clip(shifted // sy, 0, oh - 1)
                    for kx in range(kw):
                        shifted_x = np.arange(wd) + px - kx * dx
                        vx = (shifted_x >= 0) & (shifted_x % sx == 0) & (shifted_x // sx < ow)
                        ox = np.clip(shifted_x // sx, 0, ow - 1)
                        picked = grad[:, oc][:, oy][:, :, ox]  # n, h, w
                        term = picked[:, None] * w[oc, :, ky, kx][None, :, None, None]
                        valid = (vy[:, None] & vx[None, :])[None, None]
                        out[:, chans] = np.where(valid, out[:, chans] + term, out[:, chans])
    return out


def _conv2d_weight_grad(x: Array, grad: Array, attrs: Attrs) -> Array:
    (sy, sx), (py, px), (dy, dx), groups = _conv_geometry(attrs)
    o, cg, kh, kw = attrs["weight_shape"]
    n, c, h, wd = x.shape
    _, _, oh, ow = grad.shape
    og = o // groups
    out = np.zeros((o, cg, kh, kw), x.dtype)
    channels = (np.arange(o) // og * cg)[:, None] + np.arange(cg)[None, :] if og else \
        np.zeros((o, cg), np.int64)
    with np.errstate(all="ignore"):
        for b in range(n):  # accumulation order n, oh, ow
            for y in range(oh):
                iy = y * sy - py + np.arange(kh) * dy
                vy = (iy >= 0) & (iy < h)
                for z in range(ow):
                    ix = z * sx - px + np.arange(kw) * dx
                    vx = (ix >= 0) & (ix < wd)
                    patch = x[b][channels[:, :, None, None], np.clip(iy, 0, h - 1)[None, None, :, None],
                                 np.clip(ix, 0, wd - 1)[None, None, None, :]]
                    term = grad[b, :, y, z][:, None, None, None] * patch
                    valid = (vy[:, None] & vx[None, :])[None, None]
                    out = np.where(valid, out + term, out)
    return out


def _pool_geometry(attrs: Attrs) -> Tuple[List[int], List[int], List[int], List[int], bool]:
    kernel = list(attrs["kernel"])
    return (kernel, _pair(attrs, "stride", kernel), _pair(attrs, "padding", [0, 0]),
            _pair(attrs, "dilation", [1, 1]), bool(attrs.get("ceil_mode", False)))


def _pool_size(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    numerator = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = numerator // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_argmax(x: Array, attrs: Attrs) -> Tuple[Array, Array]:
    """Per plane and window, the in-plane index of the first maximum (first NaN wins), −1 if none."""
    (kh, kw), (sy, sx), (py, px), (dy, dx), ceil = _pool_geometry(attrs)
    h, wd = x.shape[-2:]
    planes = x.reshape(-1, h * wd)
    oh, ow = _pool_size(h, kh, sy, py, dy, ceil), _pool_size(wd, kw, sx, px, dx, ceil)
    best = np.full((planes.shape[0], oh, ow), -1, np.int64)
    for y in range(oh):
        for z in range(ow):
            current = best[:, y, z]
            for ky in range(kh):
                iy = y * sy - py + ky * dy
                for kx in range(kw):
                    ix = z * sx - px + kx * dx
                    if not (0 <= iy < h and 0 <= ix < wd):
                        continue
                    value = planes[:, iy * wd + ix]
                    held = planes[np.arange(planes.shape[0]), np.maximum(current, 0)]
                    take = (current < 0) | (~np.isnan(held) & (np.isnan(value) | (value > held)))
                    current = np.where(take, iy * wd + ix, current)
            best[:, y, z] = current
    return planes, best


def _max_pool2d(name: str, args: List[Array], attrs: Attrs) -> Array:
    x = args[-1]
    planes, best = _pool_argmax(x, attrs)
    out_shape = x.shape[:-2] + best.shape[1:]
    if name == "max_pool2d_indices":
        return best.reshape(out_shape)
    if name == "max_pool2d":
        rows = np.arange(planes.shape[0])[:, None, None]
        values = np.where(best >= 0, planes[rows, np.maximum(best, 0)], x.dtype.type(-np.inf))
        return values.reshape(out_shape).astype(x.dtype)
    grad = np.zeros(planes.size, x.dtype)
    flat = (best + (np.arange(planes.shape[0]) * planes.shape[1])[:, None, None]).reshape(-1)
    keep = best.reshape(-1) >= 0
    np.add.at(grad, flat[keep], args[0].reshape(-1)[keep])  # in output order
    return grad.reshape(x.shape)


PHILOX_M0, PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32_10(counter: Sequence[ArrayLike],
                  key: Sequence[int]) -> Tuple[Array, Array, Array, Array]:
    """Philox4x32-10 (Random123) on arrays: counter = 4 uint32 arrays, key = 2 ints."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint32) for c in counter)
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    low = np.uint64(0xFFFFFFFF)
    for round_ in range(10):
        if round_:
            k0, k1 = (k0 + PHILOX_W0) & 0xFFFFFFFF, (k1 + PHILOX_W1) & 0xFFFFFFFF
        p0 = c0.astype(np.uint64) * PHILOX_M0
        p1 = c2.astype(np.uint64) * PHILOX_M1
        c0, c1, c2, c3 = (((p1 >> np.uint64(32)).astype(np.uint32) ^ c1 ^ np.uint32(k0)),
                          (p1 & low).astype(np.uint32),
                          ((p0 >> np.uint64(32)).astype(np.uint32) ^ c3 ^ np.uint32(k1)),
                          (p0 & low).astype(np.uint32))
    return c0, c1, c2, c3


def dropout_mask(shape: Sequence[int], p: float, seed: int = 0, offset: int = 0,
                 dtype: str = "f32") -> Array:
    """The catalog's dropout_mask (docs/ops.md): 1/(1-p) where kept, 0 where dropped; element i
    draws Philox4x32-10 counter offset + i under `seed`. What a training round's dropout uses
    (docs/training.md, "Dropout")."""
    return _dropout_mask({"shape": list(shape), "p": p, "seed": seed, "offset": offset,
                          "dtype": dtype})


def _dropout_mask(attrs: Attrs) -> Array:
    shape = [int(d) for d in attrs["shape"]]
    p = float(attrs["p"])
    seed = int(attrs["seed"]) & 0xFFFFFFFFFFFFFFFF
    position = np.arange(int(np.prod(shape)), dtype=np.uint64) + np.uint64(int(attrs.get("offset", 0)))
    zeros = np.zeros(position.shape, np.uint32)
    word = philox4x32_10(((position & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                          (position >> np.uint64(32)).astype(np.uint32), zeros, zeros),
                         (seed & 0xFFFFFFFF, seed >> 32))[0]
    dtype = DTYPES[attrs.get("dtype", "f32")]
    kept = word.astype(np.float64) >= p * 4294967296.0
    return np.where(kept, dtype(1.0 / (1.0 - p)), dtype(0)).astype(dtype).reshape(shape)


def _catalog3(name: str, args: List[Array], attrs: Attrs) -> Array:
    if name == "gather":
        return _gather(args[0], args[1], attrs)
    if name == "index_select":
        return _index_select(args[0], args[1], _dim(attrs, args[0].ndim), name)
    if name == "embedding":
        return _index_select(args[0], args[1], 0, name).reshape(args[1].shape + args[0].shape[1:])
    if name == "one_hot":
        return _one_hot(args[0], attrs)
    if name == "index_add":
        return _index_add(args[0], args[1], args[2], attrs)
    if name == "layer_norm":
        return _layer_norm(args[0], args[1], args[2], attrs)
    if name == "layer_norm_backward":
        return _layer_norm_backward(args[0], args[1], args[2], attrs)
    if name == "concat":
        return np.concatenate(args, axis=_dim(attrs, args[0].ndim, 0))
    if name == "slice":
        return _slice(args[0], attrs)
    if name == "pad":
        return _pad(args[0], attrs)
    if name == "conv2d":
        return _conv2d(args[0], args[1], attrs)
    if name == "conv2d_input_grad":
        return _conv2d_input_grad(args[0], args[1], attrs)
    if name == "conv2d_weight_grad":
        return _conv2d_weight_grad(args[0], args[1], attrs)
    if name == "dropout_mask":
        return _dropout_mask(attrs)
    return _max_pool2d(name, args, attrs)


CATALOG3 = ("gather", "index_select", "embedding", "one_hot", "index_add", "layer_norm",
            "layer_norm_backward", "concat", "slice", "pad", "conv2d", "conv2d_input_grad",
            "conv2d_weight_grad", "max_pool2d", "max_pool2d_indices", "max_pool2d_backward",
            "dropout_mask")


def run_op(name: str, args: Sequence[Array], attrs: Attrs) -> Array:
    """One catalog op on numpy arrays."""
    if name not in OPS:
        raise GraphError("invalid_input", "unknown op %r" % name)
    if not arity_accepts(OPS[name][0], len(args)):
        raise GraphError("invalid_input", "%s cannot take %d inputs" % (name, len(args)))
    if name in CATALOG3:
        return _catalog3(name, [np.asarray(a) for a in args], attrs)
    if name == "where":
        if_true, if_false = np.broadcast_arrays(args[1], args[2])
        return np.where(args[0], if_true, if_false).astype(args[1].dtype)
    if name == "clamp":
        return _clamp(args[0], attrs)
    if name in ("sum", "mean", "amax", "amin", "prod", "var"):
        return np.asarray(_reduce(name, args[0], attrs))
    if name in ("argmax", "argmin", "cumsum", "softmax", "log_softmax"):
        return _along(name, args[0], attrs)
    if name == "cast":
        return _cast(args[0], attrs["dtype"])
    if name == "reshape":
        return args[0].reshape(attrs["shape"])
    if name == "permute":
        return np.ascontiguousarray(np.transpose(args[0], attrs["dims"]))
    if name == "expand":
        shape = [d if d != -1 else args[0].shape[i - (len(attrs["shape"]) - args[0].ndim)]
                 for i, d in enumerate(attrs["shape"])]
        return np.ascontiguousarray(np.broadcast_to(args[0], shape))
    if name == "matmul":
        return np.matmul(args[0], args[1])
    if len(args) == 2:
        return _binary(name, args[0], args[1])
    return _unary(name, args[0], attrs)


def _as_dict(graph: Union[Graph, str, bytes, Dict[str, Any]]) -> Dict[str, Any]:
    if isinstance(graph, Graph):
        return graph.to_dict()
    if isinstance(graph, (str, bytes)):
        return json.loads(graph)
    return graph


def run(graph: Union[Graph, str, bytes, Dict[str, Any]],
        inputs: Sequence[ArrayLike]) -> List[Array]:
    """Runs a graph on numpy inputs (in graph input order); returns the outputs as a list."""
    spec = _as_dict(graph)
    if spec.get("catalog") != CATALOG_VERSION:
        raise GraphError("version_mismatch", "graph uses catalog %r" % spec.get("catalog"))
    if len(inputs) != len(spec["inputs"]):
        raise GraphError("invalid_input", "graph takes %d inputs" % len(spec["inputs"]))
    values = {}
    for declared, array in zip(spec["inputs"], inputs):
        values[declared["id"]] = np.asarray(array, dtype=DTYPES[declared["dtype"]]) \
            .reshape(declared["shape"])
    for constant in spec.get("constants", []):
        values[constant["id"]] = tensor_from_json(constant)
    pending = list(spec.get("nodes", []))
    while pending:
        ready = [n for n in pending if all(a in values for a in n["args"])]
        if not ready:
            known = {n["id"] for n in pending}
            missing = [a for n in pending for a in n["args"] if a not in values and a not in known]
            raise GraphError("invalid_input", "node reads undefined value %d" % missing[0]
                             if missing else "graph has a cycle")
        for node in ready:
            args = [values[a] for a in node["args"]]
            values[node["id"]] = np.asarray(run_op(node["op"], args, node.get("attrs", {})))
        pending = [n for n in pending if n["id"] not in values]
    return [values[i] for i in spec["outputs"]]
