"""The op-by-op suite: every catalog op, on every backend, against PyTorch's own result.

Each case builds a one-op graph (goblin.graph), runs it on a backend (the numpy reference, the C++
CPU executor, the OpenCL executor: op_suite_backends.py) and compares the output with what torch
computes on the same inputs, under the op's tolerance class (docs/ops.md). Inputs are random and
carry edge values: NaN, ±inf and ±0 for float ops, negative integers (and INT_MIN) for integer
division and abs, empty and broadcast shapes where the op allows them. Errors the catalog defines
(integer division by zero, indices out of range) must be refused with invalid_input.
"""

import zlib

import numpy as np
import pytest

from goblin import graph

from op_suite_backends import BACKEND_PARAMS, CPP_BACKENDS, UNIT_ROUNDOFF, BackendError, assert_matches, gamma, \
    run_graph

torch = pytest.importorskip("torch", reason="the op suite compares with PyTorch")
F = torch.nn.functional

ALL_OPS = [
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "neg", "abs", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "erf", "lgamma", "relu", "gelu", "isnan", "where", "clamp",
    "sum", "mean", "amax", "amin", "prod", "var", "argmax", "argmin", "cumsum", "softmax",
    "log_softmax", "cast", "reshape", "permute", "expand", "matmul",
    "gather", "index_select", "embedding", "one_hot", "index_add", "layer_norm",
    "layer_norm_backward", "concat", "slice", "pad", "conv2d", "conv2d_input_grad",
    "conv2d_weight_grad", "max_pool2d", "max_pool2d_indices", "max_pool2d_backward",
    "dropout_mask",
]
I32_MIN = np.iinfo(np.int32).min
I64_MIN = np.iinfo(np.int64).min


# ---- inputs -------------------------------------------------------------------------------------
class Inputs:
    """Random inputs for one case, from a generator seeded by the case's name."""

    def __init__(self, name):
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))

    def floats(self, *shape, dtype=np.float32, special=True, scale=3.0, low=None):
        if low is not None:
            x = self.rng.uniform(low, low + scale, shape)
        else:
            x = self.rng.standard_normal(shape) * scale
        x = x.astype(dtype)
        if special and x.size >= 8:
            flat = x.reshape(-1)
            spots = self.rng.choice(flat.size, 5, replace=False)
            flat[spots] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
        return x

    def ints(self, *shape, dtype=np.int32, low=-20, high=20, nonzero=False):
        x = self.rng.integers(low, high, shape).astype(dtype)
        if nonzero:
            x[x == 0] = -3
        return x

    def bools(self, *shape):
        return self.rng.random(shape) < 0.5


CASES = []


def case(op, label, make, torch_fn, **attrs):
    """Registers a case; make(Inputs) returns the input arrays, torch_fn(*tensors) the answer."""
    name = "%s-%s" % (op, label)
    CASES.append(pytest.param(op, make(Inputs(name)), attrs, torch_fn, id=name))


# ---- elementwise --------------------------------------------------------------------------------
for op, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
               ("maximum", torch.maximum), ("minimum", torch.minimum)):
    case(op, "f32-broadcast", lambda r: [r.floats(3, 4), r.floats(4, special=False)], fn)
    case(op, "f32-special", lambda r: [r.floats(2, 8), r.floats(2, 8)], fn)
    case(op, "i32", lambda r: [r.ints(5, low=-1000, high=1000), r.ints(1)], fn)
    case(op, "i64-wrap", lambda r: [np.array([I64_MIN, -1, 7], np.int64),
                                    np.array([-1, I64_MIN, 3], np.int64)], fn)
    case(op, "empty", lambda r: [r.floats(0, 3), r.floats(3)], fn)
case("div", "f32-special", lambda r: [r.floats(2, 8), r.floats(2, 8)], torch.div)
case("div", "f64-broadcast",
     lambda r: [r.floats(3, 1, dtype=np.float64), r.floats(4, dtype=np.float64)],
     torch.div)
case("div", "zero-divisors", lambda r: [np.array([1, -1, 0, np.nan], np.float32),
                                        np.array([0, 0, 0, 0], np.float32)], torch.div)
case("div", "empty", lambda r: [r.floats(0), r.floats(1)], torch.div)
case("pow", "f32", lambda r: [r.floats(3, 4, low=0.1, scale=4), r.floats(4, special=False)],
     torch.pow)
case("pow", "f32-negative-base",
     lambda r: [r.floats(2, 8), np.array([2.0, 0.5, -1.0, 3.0, 0.0, -2.0, 1.0, 2.5], np.float32)],
     torch.pow)
case("pow", "f64",
     lambda r: [r.floats(6, dtype=np.float64, low=0.5), r.floats(6, dtype=np.float64)],
     torch.pow)
for op, fn in (("floor_divide", torch.floor_divide), ("remainder", torch.remainder)):
    # INT_MIN // -1 traps inside PyTorch (SIGFPE): test_integer_division_overflow_wraps has it.
    case(op, "i32-signs", lambda r: [np.array([7, -7, 7, -7, 0, 13, -13, I32_MIN], np.int32),
                                     np.array([2, 2, -2, -2, 5, -4, 4, 3], np.int32)], fn)
    case(op, "i64-broadcast", lambda r: [r.ints(4, 5, dtype=np.int64, low=-100, high=100),
                                         r.ints(5, dtype=np.int64, nonzero=True)], fn)
    case(op, "f32-special", lambda r: [r.floats(3, 8), r.floats(8)], fn)
    case(op, "f64-zero-divisor", lambda r: [np.array([5.0, -5.0, 0.0, np.inf, 7.5], np.float64),
                                            np.array([0.0, 0.0, 0.0, 2.0, -2.0], np.float64)], fn)
    case(op, "empty", lambda r: [r.ints(0, 2), r.ints(2, nonzero=True)], fn)
for op in ("eq", "ne", "lt", "le", "gt", "ge"):
    fn = getattr(torch, op)
    case(op, "f32-special", lambda r: [r.floats(3, 8), r.floats(8)], fn)
    case(op, "i64", lambda r: [r.ints(6, dtype=np.int64, low=-3, high=3),
                               r.ints(6, dtype=np.int64, low=-3, high=3)], fn)
    case(op, "bool", lambda r: [r.bools(5), r.bools(1)], fn)
    case(op, "empty", lambda r: [r.floats(0, 4), r.floats(4)], fn)
for op in ("logical_and", "logical_or", "logical_xor"):
    fn = getattr(torch, op)
    case(op, "f32-nan", lambda r: [np.array([0.0, np.nan, -0.0, 2.0], np.float32),
                                   np.array([1.0, 1.0, 0.0, 0.0], np.float32)], fn)
    case(op, "bool-broadcast", lambda r: [r.bools(3, 4), r.bools(4)], fn)
    case(op, "i32", lambda r: [r.ints(7, low=-2, high=3), r.ints(7, low=-2, high=3)], fn)
for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    fn = getattr(torch, op)
    case(op, "i32",
         lambda r: [r.ints(3, 5, low=-1000, high=1000), r.ints(5, low=-1000, high=1000)], fn)
    case(op, "i64-min", lambda r: [np.array([I64_MIN, -1, 12345], np.int64),
                                   np.array([-1, I64_MIN, -54321], np.int64)], fn)
    case(op, "bool", lambda r: [r.bools(6), r.bools(6)], fn)
for op, fn in (("logical_not", torch.logical_not), ("bitwise_not", torch.bitwise_not)):
    case(op, "i32", lambda r: [r.ints(6, low=-3, high=3)], fn)
    case(op, "bool", lambda r: [r.bools(2, 3)], fn)
    case(op, "i64-empty", lambda r: [r.ints(0, 3, dtype=np.int64)], fn)
case("logical_not", "f32-nan", lambda r: [np.array([0.0, -0.0, np.nan, 1.5], np.float32)],
     torch.logical_not)
for op in ("neg", "abs", "relu"):
    fn = getattr(torch, op)
    case(op, "f32-special", lambda r: [r.floats(4, 5)], fn)
    case(op, "i32-min",
         lambda r: [np.array([I32_MIN, -5, 0, 5, np.iinfo(np.int32).max], np.int32)], fn)
    case(op, "f64-empty", lambda r: [r.floats(0, 2, dtype=np.float64)], fn)
for op in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "lgamma"):
    fn = getattr(torch, op) if op != "lgamma" else torch.lgamma
    case(op, "f32-special", lambda r: [r.floats(4, 6)], fn)
    case(op, "f64", lambda r: [r.floats(9, dtype=np.float64)], fn)
    case(op, "empty", lambda r: [r.floats(0)], fn)
case("lgamma", "poles", lambda r: [np.array([0.0, -0.0, -1.0, -2.0, 1.0, 2.0, -2.5, 1e-3],
                                            np.float32)], torch.lgamma)
case("gelu", "none-special", lambda r: [r.floats(4, 6)], lambda x: F.gelu(x))
case("gelu", "tanh", lambda r: [r.floats(4, 6, special=False)],
     lambda x: F.gelu(x, approximate="tanh"),
     approximate="tanh")
case("gelu", "f64-none", lambda r: [r.floats(9, dtype=np.float64, special=False, scale=6)],
     lambda x: F.gelu(x), approximate="none")
case("isnan", "f32-special", lambda r: [r.floats(2, 8)], torch.isnan)
case("isnan", "i32", lambda r: [r.ints(4)], torch.isnan)
case("where", "broadcast", lambda r: [r.bools(3, 1), r.floats(1, 4), r.floats(3, 4)], torch.where)
case("where", "i64", lambda r: [r.bools(5), r.ints(5, dtype=np.int64), r.ints(1, dtype=np.int64)],
     torch.where)
case("where", "empty", lambda r: [r.bools(0, 2), r.floats(2), r.floats(1)], torch.where)
case("clamp", "f32-special", lambda r: [r.floats(3, 8)], lambda x: torch.clamp(x, -1.5, 2.0),
     min=-1.5, max=2.0)
case("clamp", "f32-min-only", lambda r: [r.floats(3, 8)], lambda x: torch.clamp(x, min=0.25),
     min=0.25)
case("clamp", "i32-inverted", lambda r: [r.ints(9)], lambda x: torch.clamp(x, 5, -5), min=5, max=-5)
case("clamp", "i64-max-only", lambda r: [r.ints(0, 3, dtype=np.int64)],
     lambda x: torch.clamp(x, max=1),
     max=1)


# ---- reductions ---------------------------------------------------------------------------------
def torch_reduce(fn, x, dims=None, keepdim=False):
    """fn over several dims at once, also for torch functions that take one dim (prod)."""
    dims = sorted(d % x.ndim for d in dims) if dims else list(range(x.ndim))
    rest = [d for d in range(x.ndim) if d not in dims]
    flat = x.permute(rest + dims).reshape([x.shape[d] for d in rest] + [-1])
    out = fn(flat, -1)
    if keepdim:
        out = out.reshape([1 if d in dims else x.shape[d] for d in range(x.ndim)])
    return out


for op in ("sum", "mean", "amax", "amin", "prod"):
    def reduce(x, dims=None, keepdim=False, fn=getattr(torch, op)):
        return torch_reduce(fn, x, dims, keepdim)
    scale = 1.2 if op == "prod" else 3.0
    case(op, "f32-dim1-keepdim", lambda r: [r.floats(3, 5, special=False, scale=scale)],
         lambda x, reduce=reduce: reduce(x, [1], True), dims=[1], keepdim=True)
    case(op, "f32-all", lambda r: [r.floats(4, 3, 2, special=False, scale=scale)],
         lambda x, reduce=reduce: reduce(x))
    case(op, "f64-dims-0-2", lambda r: [r.floats(3, 2, 4, dtype=np.float64, special=False,
                                                scale=scale)],
         lambda x, reduce=reduce: reduce(x, [0, -1]), dims=[0, -1])
    case(op, "f32-special", lambda r: [r.floats(2, 8)], lambda x, reduce=reduce: reduce(x, [1]),
         dims=[1])
    if op != "mean":
        case(op, "i32", lambda r: [r.ints(4, 5, low=-5, high=6)],
             lambda x, reduce=reduce: reduce(x, [0]), dims=[0])
    if op not in ("amax", "amin"):
        case(op, "empty", lambda r: [r.floats(0, 3)], lambda x, reduce=reduce: reduce(x, [0]),
             dims=[0])
case("var", "f32-dim1", lambda r: [r.floats(3, 6, special=False)], lambda x: torch.var(x, 1),
     dims=[1],
     correction=1)
case("var", "f32-correction0-keepdim", lambda r: [r.floats(4, 5, special=False, scale=1, low=1000)],
     lambda x: torch.var(x, 0, unbiased=False, keepdim=True), dims=[0], correction=0, keepdim=True)
case("var", "f64-all", lambda r: [r.floats(3, 4, dtype=np.float64, special=False)], torch.var)
case("var", "f32-special", lambda r: [r.floats(2, 8)], lambda x: torch.var(x, 1), dims=[1])
case("var", "one-element", lambda r: [r.floats(3, 1, special=False)], lambda x: torch.var(x, 1),
     dims=[1])
for op in ("argmax", "argmin"):
    fn = getattr(torch, op)
    case(op, "f32-nan-dim1", lambda r: [r.floats(3, 8)], lambda x, fn=fn: fn(x, 1), dim=1)
    case(op, "i32-flat", lambda r: [r.ints(4, 5, low=-3, high=3)], lambda x, fn=fn: fn(x))
    case(op, "f64-keepdim", lambda r: [r.floats(3, 4, dtype=np.float64, special=False)],
         lambda x, fn=fn: fn(x, 0, keepdim=True), dim=0, keepdim=True)
case("cumsum", "f32-dim1", lambda r: [r.floats(3, 6, special=False)],
     lambda x: torch.cumsum(x, 1), dim=1)
case("cumsum", "i32-to-i64", lambda r: [r.ints(5, 2)], lambda x: torch.cumsum(x, 0), dim=0)
case("cumsum", "f32-special", lambda r: [r.floats(2, 8)], lambda x: torch.cumsum(x, -1), dim=-1)
case("cumsum", "empty", lambda r: [r.floats(0, 3)], lambda x: torch.cumsum(x, 0), dim=0)
for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
    case(op, "f32-last", lambda r: [r.floats(3, 7, special=False)], lambda x, fn=fn: fn(x, -1),
         dim=-1)
    case(op, "f64-dim0", lambda r: [r.floats(5, 2, dtype=np.float64, special=False, scale=20)],
         lambda x, fn=fn: fn(x, 0), dim=0)
    case(op, "f32-inf-nan", lambda r: [np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf],
                                                 [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0]],
                                                np.float32)],
         lambda x, fn=fn: fn(x, 1), dim=1)
    case(op, "empty", lambda r: [r.floats(0, 4)], lambda x, fn=fn: fn(x, 1), dim=1)


# ---- shapes -------------------------------------------------------------------------------------
TORCH_DTYPES = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
                "bool": torch.bool}
for source, target, make in (
        ("f32", "i32", lambda r: [r.floats(3, 5, special=False, scale=100)]),
        ("f64", "f32", lambda r: [r.floats(3, 8, dtype=np.float64)]),
        ("f32", "bool", lambda r: [r.floats(2, 8)]),
        ("i64", "i32", lambda r: [r.ints(6, dtype=np.int64, low=-2 ** 40, high=2 ** 40)]),
        ("i32", "f32", lambda r: [r.ints(5, low=-2 ** 30, high=2 ** 30)]),
        ("bool", "f64", lambda r: [r.bools(4)]),
        ("f32", "f64", lambda r: [r.floats(0, 2)])):
    case("cast", "%s-%s" % (source, target), make,
         lambda x, target=target: x.to(TORCH_DTYPES[target]), dtype=target)
case("reshape", "infer", lambda r: [r.floats(2, 6)], lambda x: x.reshape(3, -1), shape=[3, -1])
case("reshape", "i64-to-scalar", lambda r: [r.ints(1, 1, dtype=np.int64)], lambda x: x.reshape([]),
     shape=[])
case("reshape", "empty", lambda r: [r.floats(0, 4)], lambda x: x.reshape(2, 0, 3), shape=[2, 0, 3])
case("permute", "rank3", lambda r: [r.floats(2, 3, 4)], lambda x: x.permute(2, 0, 1),
     dims=[2, 0, 1])
case("permute", "negative-bool", lambda r: [r.bools(2, 3)], lambda x: x.permute(-1, 0),
     dims=[-1, 0])
case("expand", "new-dims", lambda r: [r.floats(3, 1)], lambda x: x.expand(2, 3, 4), shape=[2, 3, 4])
case("expand", "keep-dim", lambda r: [r.ints(1, 4)], lambda x: x.expand(5, -1), shape=[5, -1])
case("expand", "to-empty", lambda r: [r.floats(1, 2)], lambda x: x.expand(0, 2), shape=[0, 2])
case("matmul", "f32-2d", lambda r: [r.floats(4, 6, special=False), r.floats(6, 3, special=False)],
     torch.matmul)
case("matmul", "f32-batch-broadcast", lambda r: [r.floats(2, 1, 3, 4, special=False),
                                                 r.floats(3, 4, 2, special=False)], torch.matmul)
case("matmul", "f64", lambda r: [r.floats(3, 5, 2, dtype=np.float64, special=False),
                                 r.floats(2, 4, dtype=np.float64, special=False)], torch.matmul)
case("matmul", "i64", lambda r: [r.ints(3, 4, dtype=np.int64), r.ints(4, 2, dtype=np.int64)],
     torch.matmul)
case("matmul", "special", lambda r: [np.array([[1.0, np.nan], [np.inf, 0.0]], np.float32),
                                     np.array([[1.0, 2.0], [0.0, 3.0]], np.float32)], torch.matmul)
case("matmul", "k-empty", lambda r: [r.floats(3, 0), r.floats(0, 2)], torch.matmul)


# ---- indexing -----------------------------------------------------------------------------------
case("gather", "dim1-i64", lambda r: [r.floats(3, 5), r.ints(3, 4, dtype=np.int64, low=0, high=5)],
     lambda x, i: torch.gather(x, 1, i), dim=1)
case("gather", "dim0-i32index-int",
     lambda r: [r.ints(4, 3, dtype=np.int64), r.ints(2, 3, low=0, high=4)],
     lambda x, i: torch.gather(x, 0, i.long()), dim=0)
case("gather", "negative-dim-empty",
     lambda r: [r.floats(2, 3), r.ints(2, 0, dtype=np.int64, low=0, high=3)],
     lambda x, i: torch.gather(x, -1, i), dim=-1)
case("index_select", "dim0", lambda r: [r.floats(5, 3), r.ints(7, dtype=np.int64, low=0, high=5)],
     lambda x, i: torch.index_select(x, 0, i), dim=0)
case("index_select", "dim1-i32", lambda r: [r.ints(2, 4, dtype=np.int64), r.ints(3, low=0, high=4)],
     lambda x, i: torch.index_select(x, 1, i), dim=1)
case("index_select", "scalar-index", lambda r: [r.floats(4, 2), np.array(3, np.int64)],
     lambda x, i: torch.index_select(x, 0, i), dim=0)
case("embedding", "i64", lambda r: [r.floats(10, 3), r.ints(2, 4, dtype=np.int64, low=0, high=10)],
     lambda w, i: F.embedding(i, w))
case("embedding", "i32-f64", lambda r: [r.floats(6, 2, dtype=np.float64), r.ints(5, low=0, high=6)],
     lambda w, i: F.embedding(i, w))
case("embedding", "empty", lambda r: [r.floats(4, 2), r.ints(0, dtype=np.int64, low=0, high=4)],
     lambda w, i: F.embedding(i, w))
case("one_hot", "i64", lambda r: [r.ints(5, dtype=np.int64, low=0, high=6)],
     lambda x: F.one_hot(x, 6), num_classes=6)
case("one_hot", "i32-2d", lambda r: [r.ints(2, 3, low=0, high=3)], lambda x: F.one_hot(x.long(), 3),
     num_classes=3)
case("index_add", "dim0-duplicates-alpha", lambda r: [r.floats(4, 3, special=False),
                                                      np.array([0, 2, 0, 3, 0], np.int64),
                                                      r.floats(5, 3, special=False)],
     lambda x, i, s: torch.index_add(x, 0, i, s, alpha=2.0), dim=0, alpha=2.0)
case("index_add", "dim1-i64-values",
     lambda r: [r.ints(2, 4, dtype=np.int64), r.ints(3, low=0, high=4),
                                                r.ints(2, 3, dtype=np.int64)],
     lambda x, i, s: torch.index_add(x, 1, i.long(), s), dim=1)
case("index_add", "special", lambda r: [r.floats(2, 4), np.array([1, 1], np.int64), r.floats(2, 4)],
     lambda x, i, s: torch.index_add(x, 0, i, s), dim=0)


# ---- neural-network ops -------------------------------------------------------------------------
def _layer_norm(n, eps=1e-5):
    return lambda x, w, b: F.layer_norm(x, x.shape[x.ndim - n:], w, b, eps)


case("layer_norm", "last-dim",
     lambda r: [r.floats(2, 3, 8, special=False), r.floats(8, special=False),
                                          r.floats(8, special=False)], _layer_norm(1),
     normalized_ndim=1, eps=1e-5)
case("layer_norm", "two-dims-offset", lambda r: [r.floats(4, 3, 5, special=False, low=100, scale=1),
                                                 r.floats(3, 5, special=False),
                                                 r.floats(3, 5, special=False)],
     _layer_norm(2, 1e-3), normalized_ndim=2, eps=1e-3)
case("layer_norm", "f64", lambda r: [r.floats(3, 16, dtype=np.float64, special=False),
                                     r.floats(16, dtype=np.float64, special=False),
                                     r.floats(16, dtype=np.float64, special=False)], _layer_norm(1),
     normalized_ndim=1)
case("layer_norm", "nan-row",
     lambda r: [np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 4.0]], np.float32),
                np.ones(3, np.float32), np.zeros(3, np.float32)],
     _layer_norm(1), normalized_ndim=1)


def _layer_norm_backward(n, eps, output):
    def torch_fn(grad, x, w):
        x = x.clone().requires_grad_()
        w = w.clone().requires_grad_()
        b = torch.zeros_like(w, requires_grad=True)
        F.layer_norm(x, x.shape[x.ndim - n:], w, b, eps).backward(grad)
        return {"input": x.grad, "weight": w.grad, "bias": b.grad}[output]
    return torch_fn


for output in ("input", "weight", "bias"):
    case("layer_norm_backward", output, lambda r: [r.floats(4, 8, special=False),
                                                   r.floats(4, 8, special=False),
                                                   r.floats(8, special=False)],
         _layer_norm_backward(1, 1e-5, output), normalized_ndim=1, eps=1e-5, output=output)
case("layer_norm_backward", "input-two-dims-f64",
     lambda r: [r.floats(2, 3, 4, dtype=np.float64, special=False),
                r.floats(2, 3, 4, dtype=np.float64, special=False),
                r.floats(3, 4, dtype=np.float64, special=False)],
     _layer_norm_backward(2, 1e-4, "input"), normalized_ndim=2, eps=1e-4, output="input")
case("concat", "one", lambda r: [r.floats(2, 3)], lambda a: torch.cat([a], 0), dim=0)
case("concat", "two-dim0", lambda r: [r.floats(2, 3), r.floats(1, 3)], lambda a,
     b: torch.cat([a, b], 0),
     dim=0)
case("concat", "three-negative-dim",
     lambda r: [r.ints(2, 1, dtype=np.int64), r.ints(2, 3, dtype=np.int64),
                                                r.ints(2, 0, dtype=np.int64)],
     lambda a, b, c: torch.cat([a, b, c], -1), dim=-1)
case("concat", "bool", lambda r: [r.bools(3), r.bools(2)], lambda a, b: torch.cat([a, b]), dim=0)
BIG = 9223372036854775807
for label, (dim, start, end, step) in (("basic", (1, 1, 3, 1)), ("step", (1, 0, 7, 2)),
                                       ("negative-start", (0, -2, BIG, 1)),
                                       ("huge-end-step3", (1, 1, BIG, 3)),
                                       ("negative-end", (1, 0, -1, 1)), ("empty", (0, 3, 1, 1)),
                                       ("clamped", (1, -100, 100, 1))):
    case("slice", label, lambda r: [r.floats(4, 7)],
         lambda x, d=dim, s=start, e=end, st=step: x[(slice(None),) * d + (slice(s, e, st),)],
         dim=dim, start=start, end=end, step=step)
case("pad", "last-dim", lambda r: [r.floats(2, 3)], lambda x: F.pad(x, [1, 2]), pads=[1, 2])
case("pad", "two-dims-value", lambda r: [r.floats(2, 3, 2)],
     lambda x: F.pad(x, [1, 1, 2, 0], value=3.5),
     pads=[1, 1, 2, 0], value=3.5)
case("pad", "negative-crop", lambda r: [r.ints(3, 4, dtype=np.int64)],
     lambda x: F.pad(x, [-1, 1, 0, -2]),
     pads=[-1, 1, 0, -2])
case("pad", "empty-input", lambda r: [r.floats(0, 2)], lambda x: F.pad(x, [1, 1]), pads=[1, 1])

CONV_CONFIGS = {
    "basic": dict(x=(2, 3, 6, 6), w=(4, 3, 3, 3), stride=[1, 1], padding=[0, 0], dilation=[1, 1],
                  groups=1),
    "stride2-pad1": dict(x=(1, 2, 7, 5), w=(3, 2, 3, 2), stride=[2, 2], padding=[1, 1],
                         dilation=[1, 1], groups=1),
    "dilation-groups": dict(x=(2, 4, 8, 8), w=(6, 2, 3, 3), stride=[1, 2], padding=[2, 1],
                            dilation=[2, 1], groups=2),
}


def _conv_attrs(c):
    return {key: c[key] for key in ("stride", "padding", "dilation", "groups")}


def _conv(c):
    return lambda x, w: F.conv2d(x, w, None, **_conv_attrs(c))


def _conv_input_grad(c):
    def torch_fn(grad, w):
        x = torch.zeros(c["x"], dtype=w.dtype, requires_grad=True)
        F.conv2d(x, w, None, **_conv_attrs(c)).backward(grad)
        return x.grad
    return torch_fn


def _conv_weight_grad(c):
    def torch_fn(x, grad):
        w = torch.zeros(c["w"], dtype=x.dtype, requires_grad=True)
        F.conv2d(x, w, None, **_conv_attrs(c)).backward(grad)
        return w.grad
    return torch_fn


def _conv_out_shape(c):
    return tuple(F.conv2d(torch.zeros(c["x"]), torch.zeros(c["w"]), None, **_conv_attrs(c)).shape)


for label, c in CONV_CONFIGS.items():
    case("conv2d", label, lambda r, c=c: [r.floats(*c["x"], special=False),
                                          r.floats(*c["w"], special=False)], _conv(c),
         **_conv_attrs(c))
    case("conv2d_input_grad", label, lambda r, c=c: [r.floats(*_conv_out_shape(c), special=False),
                                                     r.floats(*c["w"], special=False)],
         _conv_input_grad(c), input_shape=list(c["x"]), **_conv_attrs(c))
    case("conv2d_weight_grad", label, lambda r, c=c: [r.floats(*c["x"], special=False),
                                                      r.floats(*_conv_out_shape(c), special=False)],
         _conv_weight_grad(c), weight_shape=list(c["w"]), **_conv_attrs(c))
case("conv2d", "f64-nan", lambda r: [r.floats(1, 1, 4, 4, dtype=np.float64),
                                     r.floats(2, 1, 2, 2, dtype=np.float64, special=False)],
     lambda x, w: F.conv2d(x, w), stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)

POOL_CONFIGS = {
    "k2": dict(x=(2, 3, 6, 6), kernel=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1],
               ceil_mode=False),
    "k3-s2-p1-ceil": dict(x=(1, 2, 7, 6), kernel=[3, 3], stride=[2, 2], padding=[1, 1],
                          dilation=[1, 1], ceil_mode=True),
    "overlap-dilation-chw": dict(x=(2, 7, 7), kernel=[2, 3], stride=[1, 1], padding=[0, 1],
                                 dilation=[2, 1], ceil_mode=False),
}


def _pool_attrs(c):
    return {key: c[key] for key in ("kernel", "stride", "padding", "dilation", "ceil_mode")}


def _pool(c, indices):
    def torch_fn(x):
        values, where = F.max_pool2d(x, c["kernel"], c["stride"], c["padding"], c["dilation"],
                                     c["ceil_mode"], return_indices=True)
        return where if indices else values
    return torch_fn


def _pool_backward(c):
    def torch_fn(grad, x):
        x = x.clone().requires_grad_()
        _pool(c, False)(x).backward(grad)
        return x.grad
    return torch_fn


for label, c in POOL_CONFIGS.items():
    out_shape = tuple(_pool(c, False)(torch.zeros(c["x"])).shape)
    case("max_pool2d", label, lambda r, c=c: [r.floats(*c["x"])], _pool(c, False), **_pool_attrs(c))
    case("max_pool2d_indices", label, lambda r, c=c: [r.floats(*c["x"])], _pool(c, True),
         **_pool_attrs(c))
    case("max_pool2d_backward", label,
         lambda r, c=c, s=out_shape: [r.floats(*s, special=False),
                                      r.floats(*c["x"], special=False)],
         _pool_backward(c), **_pool_attrs(c))
case("max_pool2d", "f64-ties", lambda r: [np.ones((1, 1, 4, 4), np.float64)],
     lambda x: F.max_pool2d(x, 2), kernel=[2, 2])
case("max_pool2d_indices", "ties-first-wins", lambda r: [np.ones((1, 1, 4, 4), np.float32)],
     lambda x: F.max_pool2d(x, 2, return_indices=True)[1], kernel=[2, 2])


# ---- tolerance classes --------------------------------------------------------------------------
ULP_BUDGET = {"pow": 4, "exp": 4, "log": 4, "tanh": 4, "sigmoid": 4, "erf": 4, "rsqrt": 2,
              "lgamma": 8, "gelu": 8}
INPUT_SCALED = {"lgamma", "gelu", "log_softmax"}


def _abs64(*arrays):
    return [torch.from_numpy(np.abs(np.asarray(a, np.float64))) for a in arrays]


def tolerance(op, inputs, attrs, want):
    """The allowed difference between a backend and PyTorch, twice the op's bound against the
    exact result (both sides may be off by the bound)."""
    klass = graph.OPS.get(op, (None, "exact"))[1]
    if want.dtype.kind != "f" or klass == "exact":
        return ("exact",)
    u = UNIT_ROUNDOFF[want.dtype]
    x = inputs[0]
    if op in ULP_BUDGET:
        return ("ulp", 2 * ULP_BUDGET[op], x if op in INPUT_SCALED else None)
    if op in ("softmax", "log_softmax"):
        k = x.shape[attrs["dim"]] if x.ndim else 1
        return ("ulp", 2 * (8 + 2 * k), x if op in INPUT_SCALED else None)
    scale, k = _sum_scale(op, inputs, attrs, want)
    return ("bound", 2 * gamma(k + 2, u) * np.asarray(scale, np.float64))


def _sum_scale(op, inputs, attrs, want):
    x = inputs[0]
    if op in ("sum", "mean", "prod"):
        dims = attrs.get("dims") or list(range(x.ndim))
        k = int(np.prod([x.shape[d] for d in dims])) if x.ndim else 1
        fn = {"sum": torch.sum, "mean": torch.mean, "prod": torch.prod}[op]
        [a] = _abs64(x)
        s = torch_reduce(fn, a, dims, attrs.get("keepdim", False)) if x.ndim else a
        return s.numpy(), k
    if op == "var":
        # docs/ops.md: s = Σ(x − x̄)² / max(K − c, 0), the variance itself.
        dims = attrs.get("dims") or list(range(x.ndim))
        k = int(np.prod([x.shape[d] for d in dims]))
        s = torch.var(torch.from_numpy(x.astype(np.float64)), dim=dims,
                      correction=attrs.get("correction", 1), keepdim=attrs.get("keepdim", False))
        return np.abs(s.numpy()), k
    if op == "cumsum":
        [a] = _abs64(x)
        return torch.cumsum(a, attrs["dim"]).numpy(), x.shape[attrs["dim"]]
    if op == "index_add":
        a, s = _abs64(inputs[0], inputs[2])
        index = torch.from_numpy(inputs[1].astype(np.int64))
        return torch.index_add(a, attrs["dim"], index, s,
                               alpha=abs(attrs.get("alpha", 1))).numpy(), \
            inputs[2].shape[attrs["dim"]] + 1
    if op == "matmul":
        a, b = _abs64(*inputs)
        return torch.matmul(a, b).numpy(), x.shape[-1]
    if op == "conv2d":
        a, w = _abs64(*inputs)
        k = w.shape[1] * w.shape[2] * w.shape[3]
        return F.conv2d(a, w, None, **_conv_attrs(attrs)).numpy(), k
    if op == "conv2d_input_grad":
        g, w = _abs64(*inputs)
        c = dict(attrs, x=attrs["input_shape"])
        return _conv_input_grad(c)(g, w).numpy(), w.shape[0] * w.shape[2] * w.shape[3]
    if op == "conv2d_weight_grad":
        a, g = _abs64(*inputs)
        c = dict(attrs, w=attrs["weight_shape"])
        return _conv_weight_grad(c)(a, g).numpy(), a.shape[0] * g.shape[2] * g.shape[3]
    if op == "max_pool2d_backward":
        g, _ = _abs64(*inputs)
        c = dict(attrs, stride=attrs.get("stride", attrs["kernel"]))
        return _pool_backward(c)(g, torch.from_numpy(inputs[1].astype(np.float64))).numpy(), \
            int(np.prod(attrs["kernel"]))
    if op in ("layer_norm", "layer_norm_backward"):
        # Scale of the normalized terms: (|x̂| + |x|·rstd)·|w| + |w| + |b| (times |g| for the
        # backward), K the normalized size; a few passes (mean, variance, scaling) each add γ_K.
        n = attrs["normalized_ndim"]
        k = int(np.prod(x.shape[x.ndim - n:]))
        x64 = np.asarray(inputs[1] if op == "layer_norm_backward" else x, np.float64)
        axes = tuple(range(x64.ndim - n, x64.ndim))
        with np.errstate(all="ignore"):
            xhat = (x64 - x64.mean(axis=axes, keepdims=True)) / np.sqrt(
                x64.var(axis=axes, keepdims=True) + attrs.get("eps", 1e-5))
        w = np.abs(np.asarray(inputs[2 if op == "layer_norm_backward" else 1], np.float64))
        rstd = 1 / np.sqrt(x64.var(axis=axes, keepdims=True) + attrs.get("eps", 1e-5))
        # Input-scaled: x − mean carries an error of u·|x|, magnified by rstd.
        s = (np.abs(xhat) + np.abs(x64) * rstd) * w + w
        if op == "layer_norm":
            s = s + np.abs(np.asarray(inputs[2], np.float64))
            return s, 4 * k
        g = np.abs(np.asarray(inputs[0], np.float64))
        full = (s * g * (1 + np.abs(xhat))).sum(axis=axes, keepdims=True) * rstd + s * g * rstd
        if attrs["output"] != "input":
            lead = tuple(range(x64.ndim - n))
            full = (g * (np.abs(xhat) + np.abs(x64) * rstd + 1)).sum(axis=lead)
        return np.broadcast_to(full, want.shape), 4 * k
    raise AssertionError("no tolerance rule for %s" % op)


# ---- the suite ----------------------------------------------------------------------------------
def one_op_graph(op, inputs, attrs):
    g = graph.Graph()
    args = [g.input(graph.wire_dtype(x.dtype), x.shape) for x in inputs]
    g.output(g.op(op, *args, **attrs))
    return g


def test_every_catalog_op_has_cases():
    assert sorted(graph.OPS) == sorted(ALL_OPS), "graph.OPS and this suite's list differ"
    covered = {param.values[0] for param in CASES} | {"dropout_mask"}
    assert covered == set(ALL_OPS)


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("op, inputs, attrs, torch_fn", CASES)
def test_op_matches_pytorch(op, inputs, attrs, torch_fn, backend, tmp_path):
    want = torch_fn(*[torch.from_numpy(np.array(x)) for x in inputs]).detach().numpy()
    [got] = run_graph(backend, one_op_graph(op, inputs, attrs), inputs, tmp_path)
    assert_matches(got, want, tolerance(op, inputs, attrs, want))


# ---- errors the catalog defines -----------------------------------------------------------------
ERROR_CASES = [
    pytest.param("floor_divide", [np.array([4, -4], np.int32), np.array([2, 0], np.int32)], {},
                 id="floor_divide-i32-by-zero"),
    pytest.param("remainder", [np.array([4], np.int64), np.array([[1], [0]], np.int64)], {},
                 id="remainder-i64-by-zero-broadcast"),
    pytest.param("gather", [np.zeros((2, 3), np.float32), np.array([[0, 3]], np.int64)], {"dim": 1},
                 id="gather-index-out-of-range"),
    pytest.param("index_select", [np.zeros((2, 3), np.float32), np.array([-1], np.int64)],
                 {"dim": 0}, id="index_select-negative-index"),
    pytest.param("embedding", [np.zeros((4, 2), np.float32), np.array([4], np.int32)], {},
                 id="embedding-index-out-of-range"),
    pytest.param("one_hot", [np.array([0, 3], np.int64)], {"num_classes": 3},
                 id="one_hot-class-out-of-range"),
    pytest.param("index_add", [np.zeros((2, 2), np.float32), np.array([2], np.int64),
                               np.ones((1, 2), np.float32)], {"dim": 0},
                 id="index_add-index-out-of-range"),
]


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("op, inputs, attrs", ERROR_CASES)
def test_invalid_values_are_refused(op, inputs, attrs, backend, tmp_path):
    tensors = [torch.from_numpy(x) for x in inputs]
    with pytest.raises((RuntimeError, IndexError)):  # PyTorch refuses these too
        _torch_error_call(op, tensors, attrs)
    with pytest.raises(BackendError) as raised:
        run_graph(backend, one_op_graph(op, inputs, attrs), inputs, tmp_path)
    assert raised.value.code == "invalid_input"


def _torch_error_call(op, tensors, attrs):
    if op in ("floor_divide", "remainder"):
        return getattr(torch, op)(*tensors)
    if op == "gather":
        return torch.gather(tensors[0], attrs["dim"], tensors[1])
    if op == "index_select":
        return torch.index_select(tensors[0], attrs["dim"], tensors[1])
    if op == "embedding":
        return F.embedding(tensors[1].long(), tensors[0])
    if op == "one_hot":
        return F.one_hot(tensors[0], attrs["num_classes"])
    return torch.index_add(tensors[0], attrs["dim"], tensors[1], tensors[2])


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_integer_division_overflow_wraps(backend, tmp_path):
    # docs/ops.md: MIN // -1 wraps to MIN, MIN % -1 is 0 (PyTorch itself traps with SIGFPE).
    a, b = np.array([I32_MIN, I32_MIN, 7], np.int32), np.array([-1, 1, -1], np.int32)
    [quotient] = run_graph(backend, one_op_graph("floor_divide", [a, b], {}), [a, b], tmp_path)
    [rest] = run_graph(backend, one_op_graph("remainder", [a, b], {}), [a, b], tmp_path)
    assert quotient.tolist() == [I32_MIN, I32_MIN, -7] and rest.tolist() == [0, 0, 0]


def test_cast_defines_what_pytorch_leaves_undefined():
    x = np.array([np.nan, 1e20, -1e20, 2.9, -2.9, np.inf], np.float32)
    out = one_op_graph("cast", [x], {"dtype": "i32"})
    from goblin import reference
    [got] = reference.run(out, [x])
    info = np.iinfo(np.int32)
    assert got.tolist() == [0, info.max, info.min, 2, -2, info.max]


# ---- dropout_mask: no PyTorch counterpart (counter-based), so its properties are checked --------
def _mask(backend, tmp_path, **attrs):
    g = graph.Graph()
    g.output(g.op("dropout_mask", **attrs))
    [mask] = run_graph(backend, g, [], tmp_path)
    return mask


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_dropout_mask_properties(backend, tmp_path):
    p = 0.3
    mask = _mask(backend, tmp_path, shape=[64, 64], p=p, seed=1234)
    keep = torch.tensor(1.0 / (1.0 - p), dtype=torch.float64).float().item()
    assert mask.dtype == np.float32 and mask.shape == (64, 64)
    assert set(np.unique(mask).tolist()) == {0.0, keep}
    assert abs(np.mean(mask != 0) - (1 - p)) < 0.03
    again = _mask(backend, tmp_path, shape=[64, 64], p=p, seed=1234)
    assert np.array_equal(mask, again)
    shifted = _mask(backend, tmp_path, shape=[4000], p=p, seed=1234, offset=96)
    assert np.array_equal(shifted, mask.reshape(-1)[96:4096])
    other = _mask(backend, tmp_path, shape=[64, 64], p=p, seed=1235)
    assert not np.array_equal(mask, other)
    f64 = _mask(backend, tmp_path, shape=[16], p=0.5, seed=7, dtype="f64")
    assert f64.dtype == np.float64 and set(np.unique(f64).tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("backend", CPP_BACKENDS)
def test_dropout_mask_is_bit_identical_to_the_reference(backend, tmp_path):
    attrs = dict(shape=[33, 17], p=0.1, seed=99, offset=5)
    assert np.array_equal(_mask(backend, tmp_path, **attrs), _mask("numpy-reference", tmp_path,
                                                                   **attrs))


def test_comparison_helper_rejects_what_it_should():
    want = np.array([1.0, np.nan, np.inf, 0.0], np.float32)
    assert_matches(np.array([1.0, np.nan, np.inf, -0.0], np.float32), want, ("exact",))
    for got in ([1.0000001, np.nan, np.inf, 0.0], [1.0, 0.0, np.inf, 0.0],
                [1.0, np.nan, -np.inf, 0.0]):
        with pytest.raises(AssertionError):
            assert_matches(np.array(got, np.float32), want, ("exact",))
    one_ulp = np.nextafter(np.float32(1), np.float32(2))
    assert_matches(np.array([one_ulp], np.float32), np.array([1.0], np.float32), ("ulp", 4, None))
    with pytest.raises(AssertionError):
        assert_matches(np.array([1.001], np.float32), np.array([1.0], np.float32), ("ulp", 4, None))
    with pytest.raises(AssertionError):
        assert_matches(np.array([1.5], np.float32), np.array([1.0], np.float32), ("bound", 0.4))
    with pytest.raises(AssertionError):
        assert_matches(np.array([1], np.int64), np.array([1], np.int32), ("exact",))
