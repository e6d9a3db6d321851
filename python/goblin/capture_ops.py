"""Aten op → catalog op handlers for goblin.capture (the mapping table is HANDLERS).

A handler receives the Lowering, the op's real torch result on the example inputs (`real`, which
gives the output dtype and static shape) and the op's arguments with graph values in place of
tensors; it emits catalog nodes and returns the result (a Sym, a Multi for several outputs, or a
constant torch tensor). It raises Unmappable for a call the catalog cannot express.
"""

import torch

from .capture_lowering import Multi, Unmappable

HANDLERS = {}


def aten(*names):
    def register(handler):
        for name in names:
            HANDLERS["aten." + name] = handler
        return handler
    return register


def dim_index(dim, ndim):
    return dim % ndim if ndim else 0


def _dims(dim, ndim):
    """A reduction's dim argument as a sorted list of non-negative dims; None or [] is all."""
    if dim is None:
        dims = []
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    if not ndim:
        return []
    return sorted({d % ndim for d in dims}) if dims else list(range(ndim))


def _number(value, dtype):
    if isinstance(value, torch.Tensor):
        value = value.item()
    return float(value) if dtype.is_floating_point else int(value)


# ---- elementwise ------------------------------------------------------------------------------
# Arithmetic on bools, as torch defines it: the catalog's arithmetic takes numeric dtypes only.
BOOL_ARITHMETIC = {"add": "logical_or", "mul": "logical_and", "maximum": "logical_or",
                   "minimum": "logical_and"}


def _bool_op(op, dtype):
    if dtype != torch.bool or op.startswith("bitwise_"):  # bitwise ops take bools
        return op
    if op not in BOOL_ARITHMETIC:
        raise Unmappable("%s of bools" % op)
    return BOOL_ARITHMETIC[op]


def _arithmetic(op):
    def handler(L, real, a, b, alpha=1):
        if real.dtype == torch.bool:
            return L.emit(_bool_op(op, real.dtype), [L.sym(a, real.dtype), L.sym(b, real.dtype)],
                          real.dtype, real.shape)
        x, y = L.sym(a, real.dtype), L.sym(b, real.dtype)
        if alpha != 1:
            y = L.emit("mul", [y, L.scalar(alpha, real.dtype)], real.dtype, y.shape)
        return L.emit(op, [x, y], real.dtype, real.shape)
    return handler


def _same_dtype_binary(op):
    def handler(L, real, a, b):
        return L.emit(_bool_op(op, real.dtype), [L.sym(a, real.dtype), L.sym(b, real.dtype)],
                      real.dtype, real.shape)
    return handler


def _compare(op):
    def handler(L, real, a, b):
        dtype = L.result_type(a, b)
        return L.emit(op, [L.sym(a, dtype), L.sym(b, dtype)], torch.bool, real.shape)
    return handler


def _logical(op):
    def handler(L, real, a, b):
        return L.emit(op, [L.sym(a, torch.bool), L.sym(b, torch.bool)], torch.bool, real.shape)
    return handler


def _unary(op, cast_input=True):
    def handler(L, real, x, **attrs):
        x = L.sym(x, real.dtype) if cast_input else L.sym(x)
        return L.emit(op, [x], real.dtype, real.shape, **attrs)
    return handler


for _name, _op in (("add", "add"), ("sub", "sub")):
    aten(_name + ".Tensor", _name + ".Scalar")(_arithmetic(_op))
for _name in ("mul", "div", "maximum", "minimum", "floor_divide", "remainder", "bitwise_and",
              "bitwise_or", "bitwise_xor"):
    aten(_name)(_same_dtype_binary(_name))
aten("max.other")(_same_dtype_binary("maximum"))
aten("min.other")(_same_dtype_binary("minimum"))
aten("clamp_min.Tensor")(_same_dtype_binary("maximum"))
aten("clamp_max.Tensor")(_same_dtype_binary("minimum"))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    aten(_name)(_compare(_name))
for _name in ("logical_and", "logical_or", "logical_xor"):
    aten(_name)(_logical(_name))
for _name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "lgamma",
              "relu", "bitwise_not"):
    aten(_name)(_unary(_name))
aten("isnan")(_unary("isnan", cast_input=False))
aten("logical_not")(_unary("logical_not", cast_input=False))


@aten("gelu")
def _gelu(L, real, x, approximate="none"):
    return L.emit("gelu", [L.sym(x, real.dtype)], real.dtype, real.shape, approximate=approximate)


@aten("div.Tensor_mode", "div.Scalar_mode")
def _div_mode(L, real, a, b, rounding_mode=None):
    if rounding_mode is None:
        return _same_dtype_binary("div")(L, real, a, b)
    if rounding_mode == "floor":
        return _same_dtype_binary("floor_divide")(L, real, a, b)
    if real.dtype.is_floating_point:
        raise Unmappable("float division with rounding_mode='trunc' (the catalog has no trunc)")
    # Integers: truncation = floor + 1 where the remainder is nonzero and the signs differ.
    x, y = L.sym(a, real.dtype), L.sym(b, real.dtype)
    floor = L.emit("floor_divide", [x, y], real.dtype, real.shape)
    rest = L.emit("remainder", [x, y], real.dtype, real.shape)
    zero = L.scalar(0, real.dtype)
    inexact = L.emit("ne", [rest, zero], torch.bool, real.shape)
    signs = L.emit("ne", [L.emit("lt", [x, zero], torch.bool, x.shape),
                          L.emit("lt", [y, zero], torch.bool, y.shape)], torch.bool, real.shape)
    fix = L.cast(L.emit("logical_and", [inexact, signs], torch.bool, real.shape), real.dtype)
    return L.emit("add", [floor, fix], real.dtype, real.shape)


@aten("rsub")
def _rsub(L, real, a, b, alpha=1):
    return _arithmetic("sub")(L, real, b, a, alpha)


@aten("reciprocal")
def _reciprocal(L, real, x):
    return L.emit("div", [L.scalar(1, real.dtype), L.sym(x, real.dtype)], real.dtype, real.shape)


@aten("pow")
def _pow(L, real, a, b):
    if not real.dtype.is_floating_point:
        raise Unmappable("integer pow (the catalog's pow takes floats)")
    return L.emit("pow", [L.sym(a, real.dtype), L.sym(b, real.dtype)], real.dtype, real.shape)


@aten("where")
def _where(L, real, cond, a, b):
    args = [L.sym(cond, torch.bool), L.sym(a, real.dtype), L.sym(b, real.dtype)]
    return L.emit("where", args, real.dtype, real.shape)


@aten("masked_fill")
def _masked_fill(L, real, x, mask, value):
    return _where(L, real, mask, value, x)


def _clamp_attrs(L, real, x, low, high):
    attrs = {}
    if low is not None:
        attrs["min"] = _number(low, real.dtype)
    if high is not None:
        attrs["max"] = _number(high, real.dtype)
    x = L.sym(x, real.dtype)
    return L.emit("clamp", [x], real.dtype, real.shape, **attrs) if attrs else x


@aten("clamp.default", "clip.default")
def _clamp(L, real, x, min=None, max=None):
    return _clamp_attrs(L, real, x, min, max)


@aten("clamp.Tensor", "clip.Tensor")
def _clamp_tensor(L, real, x, min=None, max=None):
    out = L.sym(x, real.dtype)
    if min is not None:
        out = L.emit("maximum", [out, L.sym(min, real.dtype)], real.dtype, real.shape)
    if max is not None:
        out = L.emit("minimum", [out, L.sym(max, real.dtype)], real.dtype, real.shape)
    return out


@aten("clamp_min.default")
def _clamp_min(L, real, x, low):
    return _clamp_attrs(L, real, x, low, None)


@aten("clamp_max.default")
def _clamp_max(L, real, x, high):
    return _clamp_attrs(L, real, x, None, high)


@aten("hardtanh")
def _hardtanh(L, real, x, min_val=-1.0, max_val=1.0):
    return _clamp_attrs(L, real, x, min_val, max_val)


# ---- reductions -------------------------------------------------------------------------------
def _reduction(op):
    def handler(L, real, x, dim=None, keepdim=False, dtype=None):
        x = L.sym(x)
        if dtype is not None or x.dtype == torch.bool:
            x = L.cast(x, dtype if dtype is not None else real.dtype)
        return L.emit(op, [x], real.dtype, real.shape, dims=_dims(dim, x.ndim),
                      keepdim=bool(keepdim))
    return handler


for _name in ("sum", "mean", "amax", "amin", "prod"):
    aten(_name)(_reduction(_name))
aten("max.default")(_reduction("amax"))
aten("min.default")(_reduction("amin"))


def _extreme_with_index(value_op, index_op):
    def handler(L, real, x, dim, keepdim=False):
        x = L.sym(x)
        d = dim_index(dim, x.ndim)
        return Multi([
            lambda: L.emit(value_op, [x], real[0].dtype, real[0].shape, dims=[d] if x.ndim else [],
                           keepdim=bool(keepdim)),
            lambda: L.emit(index_op, [x], torch.int64, real[1].shape, dim=d,
                           keepdim=bool(keepdim))])
    return handler


aten("max.dim")(_extreme_with_index("amax", "argmax"))
aten("min.dim")(_extreme_with_index("amin", "argmin"))


def _variance(L, x, dim, correction, keepdim, dtype, shape, root=False):
    x = L.sym(x)
    out = L.emit("var", [x], dtype, shape, dims=_dims(dim, x.ndim), keepdim=bool(keepdim),
                 correction=_number(correction, torch.int64))
    return L.emit("sqrt", [out], dtype, shape) if root else out


def _variance_family(root):
    def correction_form(L, real, x, dim=None, correction=None, keepdim=False):
        correction = 1 if correction is None else correction
        return _variance(L, x, dim, correction, keepdim, real.dtype, real.shape, root)

    def dim_form(L, real, x, dim, unbiased=True, keepdim=False):
        return _variance(L, x, dim, int(unbiased), keepdim, real.dtype, real.shape, root)

    def all_form(L, real, x, unbiased=True):
        return _variance(L, x, None, int(unbiased), False, real.dtype, real.shape, root)

    def with_mean(L, real, x, dim=None, correction=None, keepdim=False):
        correction = 1 if correction is None else correction
        mean_reduction = _reduction("mean")
        return Multi([
            lambda: _variance(L, x, dim, correction, keepdim, real[0].dtype, real[0].shape, root),
            lambda: mean_reduction(L, real[1], x, dim, keepdim)])
    return correction_form, dim_form, all_form, with_mean


for _name, _root in (("var", False), ("std", True)):
    _forms = _variance_family(_root)
    aten(_name + ".correction")(_forms[0])
    aten(_name + ".dim")(_forms[1])
    aten(_name + ".default")(_forms[2])
    aten(_name + "_mean.correction")(_forms[3])


def _arg_extreme(op):
    def handler(L, real, x, dim=None, keepdim=False):
        x = L.sym(x)
        attrs = {"keepdim": bool(keepdim)}
        if dim is not None:
            attrs["dim"] = dim_index(dim, x.ndim)
        return L.emit(op, [x], torch.int64, real.shape, **attrs)
    return handler


aten("argmax")(_arg_extreme("argmax"))
aten("argmin")(_arg_extreme("argmin"))


@aten("cumsum")
def _cumsum(L, real, x, dim, dtype=None):
    x = L.sym(x)
    if dtype is not None or x.dtype == torch.bool:
        x = L.cast(x, dtype if dtype is not None else real.dtype)
    return L.emit("cumsum", [x], real.dtype, real.shape, dim=dim_index(dim, x.ndim))


def _softmax_like(op):
    def handler(L, real, x, dim, half_to_float=False):
        x = L.sym(x, real.dtype)
        return L.emit(op, [x], real.dtype, real.shape, dim=dim_index(dim, x.ndim))
    return handler


aten("_softmax")(_softmax_like("softmax"))
aten("_log_softmax")(_softmax_like("log_softmax"))
aten("softmax.int")(_softmax_like("softmax"))
aten("log_softmax.int")(_softmax_like("log_softmax"))


@aten("leaky_relu")
def _leaky_relu(L, real, x, negative_slope=0.01):
    x = L.sym(x, real.dtype)
    positive = L.emit("gt", [x, L.scalar(0, real.dtype)], torch.bool, x.shape)
    scaled = L.emit("mul", [x, L.scalar(negative_slope, real.dtype)], real.dtype, x.shape)
    return L.emit("where", [positive, x, scaled], real.dtype, real.shape)


@aten("softplus")
def _softplus(L, real, x, beta=1, threshold=20):
    # log(1 + exp(βx))/β where βx <= threshold, else x. PyTorch uses log1p, which the catalog
    # lacks: for very negative x the result (tiny) is off in relative terms, not in absolute.
    x = L.sym(x, real.dtype)
    scaled = L.emit("mul", [x, L.scalar(beta, real.dtype)], real.dtype, x.shape)
    grown = L.emit("add", [L.emit("exp", [scaled], real.dtype, x.shape),
                           L.scalar(1, real.dtype)], real.dtype, x.shape)
    soft = L.emit("div", [L.emit("log", [grown], real.dtype, x.shape),
                          L.scalar(beta, real.dtype)], real.dtype, x.shape)
    linear = L.emit("gt", [scaled, L.scalar(threshold, real.dtype)], torch.bool, x.shape)
    return L.emit("where", [linear, x, soft], real.dtype, real.shape)


@aten("linalg_vector_norm")
def _vector_norm(L, real, x, ord=2, dim=None, keepdim=False, dtype=None):
    x = L.sym(x, real.dtype)
    dims = _dims(dim, x.ndim)
    size = L.emit("abs", [x], real.dtype, x.shape)
    if ord == 1:
        return L.emit("sum", [size], real.dtype, real.shape, dims=dims, keepdim=bool(keepdim))
    if ord == float("inf"):
        return L.emit("amax", [size], real.dtype, real.shape, dims=dims, keepdim=bool(keepdim))
    if ord != 2:
        raise Unmappable("vector norm of order %r (only 1, 2 and inf)" % (ord,))
    squares = L.emit("mul", [x, x], real.dtype, x.shape)
    total = L.emit("sum", [squares], real.dtype, real.shape, dims=dims, keepdim=bool(keepdim))
    return L.emit("sqrt", [total], real.dtype, real.shape)
