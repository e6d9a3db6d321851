"""Local numpy reference interpreter of catalog graphs: the semantics of docs/ops.md, used to check a
built or captured graph before upload and to cross-check the C++ reference executor through the
shared vectors in tests/vectors/graphs/.

    outputs = goblin.reference.run(graph, [x])   # graph: graph.Graph, dict or JSON text
"""

import json
import math

import numpy as np

from .graph import CATALOG_VERSION, DTYPES, OPS, Graph, tensor_from_json


class GraphError(ValueError):
    """A graph the interpreter refuses; ``code`` is the wire error code ("invalid_input", …)."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code


def _float_floor_divide(a, b):
    with np.errstate(all="ignore"):
        mod = np.fmod(a, b)
        div = (a - mod) / b
        div = np.where((mod != 0) & ((b < 0) != (mod < 0)), div - a.dtype.type(1), div)
        floored = np.floor(div)
        floored = np.where(div - floored > a.dtype.type(0.5), floored + a.dtype.type(1), floored)
        zero = np.copysign(np.zeros_like(div), a / b)
        out = np.where(div == 0, zero, floored)
        return np.where(b == 0, a / b, out).astype(a.dtype)


def _float_remainder(a, b):
    with np.errstate(all="ignore"):
        mod = np.fmod(a, b)
        return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod).astype(a.dtype)


def _int_division(name, a, b):
    if np.any(b == 0):
        raise GraphError("invalid_input", "%s: integer division by zero" % name)
    a, b = np.broadcast_arrays(a, b)
    minus_one = b == -1
    safe_b = np.where(minus_one, 1, b)
    with np.errstate(all="ignore"):
        if name == "floor_divide":
            return np.where(minus_one, np.negative(a), np.floor_divide(a, safe_b)).astype(a.dtype)
        return np.where(minus_one, 0, np.remainder(a, safe_b)).astype(a.dtype)


def _map_double(fn, x):
    out = np.array([fn(v) for v in x.astype(np.float64).reshape(-1).tolist()], dtype=np.float64)
    return out.reshape(x.shape).astype(x.dtype)


def _lgamma(v):
    if math.isnan(v) or math.isinf(v):
        return v if math.isnan(v) else math.inf
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _gelu(x, form):
    t = x.dtype.type
    if form == "tanh":
        inner = t(0.7978845608028654) * (x + t(0.044715) * x * x * x)
        return (t(0.5) * x * (t(1) + np.tanh(inner))).astype(x.dtype)
    return (t(0.5) * x * (t(1) + _map_double(math.erf, x * t(0.7071067811865476)))).astype(x.dtype)


def _binary(name, a, b):
    if a.dtype != b.dtype:
        raise GraphError("unsupported_dtype", "%s: inputs have different dtypes" % name)
    if name in ("floor_divide", "remainder") and a.dtype.kind in "iu":
        return _int_division(name, a, b)
    table = {
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


def _unary(name, x, attrs):
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
        simple = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh,
                  "rsqrt": lambda v: t(1) / np.sqrt(v),
                  "sigmoid": lambda v: t(1) / (t(1) + np.exp(-v)),
                  "erf": lambda v: _map_double(math.erf, v),
                  "lgamma": lambda v: _map_double(_lgamma, v),
                  "gelu": lambda v: _gelu(v, attrs.get("approximate", "none"))}
        return np.asarray(simple[name](x), dtype=x.dtype)


def _dims(attrs, rank):
    dims = list(attrs.get("dims", [])) or list(range(rank))
    return tuple(sorted(d % rank if rank else 0 for d in dims)) if rank else ()


def _accumulator(dtype):
    return np.int64 if dtype == np.int32 else dtype


def _reduce(name, x, attrs):
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


def _along(name, x, attrs):
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


def _cast(x, dtype):
    target = np.dtype(DTYPES[dtype])
    if x.dtype.kind == "f" and target.kind == "i":
        info = np.iinfo(target)
        with np.errstate(all="ignore"):
            clean = np.where(np.isnan(x), 0, x).astype(np.float64)
            clipped = np.clip(np.trunc(clean), float(info.min), float(info.max))
        out = np.where(clipped >= float(info.max), info.max, np.where(
            clipped <= float(info.min), info.min, clipped.astype(np.int64)))
        return out.astype(target)
    return x.astype(target)


def _clamp(x, attrs):
    out = x
    if attrs.get("min") is not None:
        out = np.where(out < x.dtype.type(attrs["min"]), x.dtype.type(attrs["min"]), out)
    if attrs.get("max") is not None:
        out = np.where(out > x.dtype.type(attrs["max"]), x.dtype.type(attrs["max"]), out)
    return out.astype(x.dtype)


def run_op(name, args, attrs):
    """One catalog op on numpy arrays."""
    if name not in OPS:
        raise GraphError("invalid_input", "unknown op %r" % name)
    if len(args) != OPS[name][0]:
        raise GraphError("invalid_input", "%s takes %d inputs" % (name, OPS[name][0]))
    if name == "where":
        return np.where(args[0], *np.broadcast_arrays(args[1], args[2])).astype(args[1].dtype)
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


def _as_dict(graph):
    if isinstance(graph, Graph):
        return graph.to_dict()
    if isinstance(graph, (str, bytes)):
        return json.loads(graph)
    return graph


def run(graph, inputs):
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
