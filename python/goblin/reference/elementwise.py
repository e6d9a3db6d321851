"""Elementwise ops of the numpy reference interpreter: binary and unary maps, cast and clamp, with
the dtype rules of lib/core/src/ops/infer_elementwise.cpp."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Dict

import numpy as np

from ..graph import DTYPES
from .common import Attrs, GraphError

if TYPE_CHECKING:
    from .common import Array


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


def binary(name: str, a: Array, b: Array) -> Array:
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


def unary(name: str, x: Array, attrs: Attrs) -> Array:
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


def cast(x: Array, dtype: str) -> Array:
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


def clamp(x: Array, attrs: Attrs) -> Array:
    out = x
    if attrs.get("min") is not None:
        out = np.where(out < x.dtype.type(attrs["min"]), x.dtype.type(attrs["min"]), out)
    if attrs.get("max") is not None:
        out = np.where(out > x.dtype.type(attrs["max"]), x.dtype.type(attrs["max"]), out)
    return out.astype(x.dtype)

