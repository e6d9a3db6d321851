"""A tiny numpy evaluator for the graph wire form of docs/ops.md, for the few ops the adversarial
tests submit: add, sub, mul, neg, relu, matmul, sum, and the convolution gradients.

Written from docs/ops.md alone: no implicit promotion, NumPy broadcasting, integers wrap, relu keeps
NaN, sum and matmul accumulate sequentially in the output dtype in C order of the reduced elements
(as the CPU reference does), so an honest answer of this evaluator agrees bit for bit with it.
`conv2d_input_grad` and `conv2d_weight_grad` are summed in float64 and rounded once: within every
element's bound, not the canonical bits (what a BLAS volunteer under "freivalds" returns).
"""

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
          "bool": np.bool_}
SPECIAL = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


class Unsupported(ValueError):
    """An op or a graph this evaluator does not run (answered with task_error)."""


def _constant(spec) -> np.ndarray:
    values = [SPECIAL.get(v, v) if isinstance(v, str) else v for v in spec["values"]]
    return np.array(values, dtype=DTYPES[spec["dtype"]]).reshape(spec["shape"])


def _same_dtype(op, args):
    if len({a.dtype for a in args}) != 1:
        raise Unsupported("%s: inputs of different dtypes %s" % (op, [str(a.dtype) for a in args]))


def _sum(x: np.ndarray, attrs) -> np.ndarray:
    rank = x.ndim
    dims = sorted({d % rank for d in attrs.get("dims", [])} or set(range(rank))) if rank else []
    keep = bool(attrs.get("keepdim", False))
    out_dtype = np.int64 if x.dtype == np.int32 else x.dtype
    kept = [d for d in range(rank) if d not in dims]
    moved = np.transpose(x, kept + dims).astype(out_dtype)
    count = int(np.prod([x.shape[d] for d in dims])) if dims else 1
    lines = moved.reshape([x.shape[d] for d in kept] + [count])
    acc = np.zeros(lines.shape[:-1], out_dtype)
    with np.errstate(all="ignore"):
        for k in range(count):  # sequential, in C order of the reduced elements
            acc = (acc + lines[..., k]).astype(out_dtype)
    if keep:
        acc = acc.reshape([1 if d in dims else x.shape[d] for d in range(rank)])
    return np.asarray(acc, out_dtype)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise Unsupported("matmul: shapes %s and %s" % (a.shape, b.shape))
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    acc = np.zeros(batch + (a.shape[-2], b.shape[-1]), a.dtype)
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):  # k summed in order, one rounding per multiply and per add
            acc = (acc + (a[..., :, k:k + 1] * b[..., k:k + 1, :]).astype(a.dtype)).astype(a.dtype)
    return acc


def _tap_range(inside: int, outside: int, tap: int, stride: int, padding: int, dilation: int):
    """(output slice, input slice) of the positions o whose tap reads input o·s − p + tap·d inside
    [0, inside); None when none does (docs/ops.md: padding positions are skipped)."""
    shift = tap * dilation - padding
    first = max(0, -(shift // stride))  # the first o with o·s + shift ≥ 0
    last = min(outside - 1, (inside - 1 - shift) // stride)
    if last < first:
        return None
    start = first * stride + shift
    return slice(first, last + 1), slice(start, start + (last - first) * stride + 1, stride)


def _conv_taps(op: str, args, attrs):
    """A convolution gradient's input and weight shapes, its groups, and for every tap (ky, kx)
    that reads inside the input the (output slice, input slice) of its rows and columns."""
    stride = attrs.get("stride", [1, 1])
    padding = attrs.get("padding", [0, 0])
    dilation = attrs.get("dilation", [1, 1])
    groups = int(attrs.get("groups", 1))
    if op == "conv2d_input_grad":
        dy, w = args
        x_shape, w_shape = list(attrs["input_shape"]), list(w.shape)
    elif op == "conv2d_weight_grad":
        x, dy = args
        x_shape, w_shape = list(x.shape), list(attrs["weight_shape"])
    else:
        raise Unsupported("op %r is not a convolution gradient" % op)
    taps = []
    for ky in range(w_shape[2]):
        for kx in range(w_shape[3]):
            rows = _tap_range(x_shape[2], dy.shape[2], ky, stride[0], padding[0], dilation[0])
            cols = _tap_range(x_shape[3], dy.shape[3], kx, stride[1], padding[1], dilation[1])
            if rows and cols:
                taps.append((ky, kx, rows, cols))
    return x_shape, w_shape, groups, taps


def conv_gradient(op: str, args, attrs) -> np.ndarray:
    """∂conv2d/∂x (args grad_out, weight) or ∂conv2d/∂w (args x, grad_out) in float64."""
    x_shape, w_shape, groups, taps = _conv_taps(op, args, attrs)
    c_per, o_per = x_shape[1] // groups, w_shape[0] // groups
    first, second = (np.asarray(a, np.float64) for a in args)
    out = np.zeros(x_shape if op == "conv2d_input_grad" else w_shape)
    for g in range(groups):
        cs, os_ = slice(g * c_per, (g + 1) * c_per), slice(g * o_per, (g + 1) * o_per)
        for ky, kx, (oy, iy), (ox, ix) in taps:
            if op == "conv2d_input_grad":  # dx[n,c,iy,ix] += Σ_o dy[n,o,oy,ox]·w[o,c,ky,kx]
                out[:, cs, iy, ix] += np.einsum("nohw,oc->nchw", first[:, os_, oy, ox],
                                                second[os_, :, ky, kx])
            else:  # dw[o,c,ky,kx] = Σ_{n,oy,ox} dy[n,o,oy,ox]·x[n,c,iy,ix]
                out[os_, :, ky, kx] += np.einsum("nohw,nchw->oc", second[:, os_, oy, ox],
                                                 first[:, cs, iy, ix])
    return out


def _apply(op: str, args, attrs) -> np.ndarray:
    if op in ("add", "sub", "mul", "matmul"):
        _same_dtype(op, args)
    with np.errstate(all="ignore"):
        if op == "add":
            return np.add(args[0], args[1])
        if op == "sub":
            return np.subtract(args[0], args[1])
        if op == "mul":
            return np.multiply(args[0], args[1])
        if op == "neg":
            return np.negative(args[0])
        if op == "relu":
            x = args[0]
            return np.where(np.isnan(x) | (x > 0), x, x.dtype.type(0)) if x.dtype.kind == "f" \
                else np.maximum(x, x.dtype.type(0))
    if op == "matmul":
        return _matmul(args[0], args[1])
    if op == "sum":
        return _sum(args[0], attrs)
    if op in ("conv2d_input_grad", "conv2d_weight_grad"):
        _same_dtype(op, args)
        return conv_gradient(op, args, attrs).astype(args[0].dtype)
    raise Unsupported("op %r is not in this evaluator" % op)


def run(graph: dict, inputs, alter=None) -> list:
    """The graph's outputs (numpy arrays, in `outputs` order) for `inputs` (in `inputs` order).
    `alter(node, args, value)`, when given, may replace each node's value (a lie on an
    intermediate that the nodes after it then compute on, consistently)."""
    if len(inputs) != len(graph["inputs"]):
        raise Unsupported("%d inputs for %d declared" % (len(inputs), len(graph["inputs"])))
    values = {}
    for spec, tensor in zip(graph["inputs"], inputs):
        tensor = np.asarray(tensor)
        if tensor.dtype != DTYPES[spec["dtype"]] or list(tensor.shape) != list(spec["shape"]):
            raise Unsupported("input %d is %s %s, declared %s %s" % (
                spec["id"], tensor.dtype, list(tensor.shape), spec["dtype"], spec["shape"]))
        values[spec["id"]] = tensor
    for spec in graph.get("constants", []):
        values[spec["id"]] = _constant(spec)
    nodes = {node["id"]: node for node in graph["nodes"]}

    def value(vid, depth=0):
        if vid in values:
            return values[vid]
        if vid not in nodes or depth > len(nodes):
            raise Unsupported("value %r is missing or on a cycle" % (vid,))
        node = nodes[vid]
        args = [value(arg, depth + 1) for arg in node["args"]]
        values[vid] = np.asarray(_apply(node["op"], args, node.get("attrs", {})))
        if alter is not None:
            values[vid] = alter(node, args, values[vid])
        return values[vid]

    return [np.ascontiguousarray(value(vid)) for vid in graph["outputs"]]
