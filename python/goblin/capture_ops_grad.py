"""Aten ops that training steps produce (backward passes, losses) → catalog ops: scatter of a value
(nll_loss_backward), index_put with accumulation (embedding_dense_backward), slice_scatter and
select_scatter (the backward of slicing), average pooling and its backward. Handlers for
goblin.capture, registered into capture_ops.HANDLERS; each is written with catalog ops alone."""

import torch

from .capture_lowering import Unmappable
from .capture_ops import dim_index, aten
from .capture_ops_nn import pair
from .capture_ops_shape import slice_of


def _moved_last_to(L, x, d):
    """x with its last axis moved to position d."""
    dims = list(range(x.ndim - 1))
    dims.insert(d, x.ndim - 1)
    if dims == list(range(x.ndim)):
        return x
    shape = tuple(x.shape[i] for i in dims)
    return L.emit("permute", [x], x.dtype, shape, dims=dims)


@aten("scatter.value", "scatter_.value")
def _scatter_value(L, real, x, dim, index, value):
    """out = x, then out[..., index[..., j, ...], ...] = value along dim: a position is set when any
    index of its line names it (one_hot summed over the index's dim)."""
    x, index = L.sym(x), L.sym(index)
    d = dim_index(dim, x.ndim)
    if index.ndim != x.ndim or any(index.shape[i] != x.shape[i] for i in range(x.ndim) if i != d):
        raise Unmappable("scatter whose index differs from its input outside the scattered dim")
    classes = x.shape[d]
    hot = L.emit("one_hot", [index], torch.int64, tuple(index.shape) + (classes,),
                 num_classes=classes)
    kept = tuple(index.shape[:d]) + tuple(index.shape[d + 1:]) + (classes,)
    hits = _moved_last_to(L, L.emit("sum", [hot], torch.int64, kept, dims=[d], keepdim=False), d)
    mask = L.emit("gt", [hits, L.scalar(0, torch.int64)], torch.bool, x.shape)
    return L.emit("where", [mask, L.sym(value, x.dtype), x], x.dtype, real.shape)


@aten("index_put", "index_put_", "_index_put_impl", "_index_put_impl_")
def _index_put(L, real, x, indices, values, accumulate=False, unsafe=False):
    """x[..., index, ...] += values with one index tensor (embedding_dense_backward): index_add."""
    x = L.sym(x)
    used = [i for i, index in enumerate(indices) if index is not None]
    if len(used) != 1 or any(index is not None for index in indices[:used[0]]):
        raise Unmappable("index_put with several index tensors")
    if not accumulate:
        raise Unmappable("index_put without accumulate (repeated indices have no defined winner)")
    d = used[0]
    index = L.sym(indices[d])
    if index.dtype not in (torch.int64, torch.int32):
        raise Unmappable("index_put with a boolean mask")
    count = 1
    for size in index.shape:
        count *= size
    flat = L.reshape(index, (count,))
    source_shape = tuple(x.shape[:d]) + (count,) + tuple(x.shape[d + 1:])
    source = L.sym(values, x.dtype)
    if tuple(source.shape) != source_shape:
        source = L.reshape(source, source_shape)
    return L.emit("index_add", [x, flat, source], x.dtype, real.shape, dim=d)


@aten("slice_scatter")
def _slice_scatter(L, real, x, src, dim=0, start=None, end=None, step=1):
    """x with x[start:end] along dim replaced by src: the kept parts of x and src, concatenated."""
    x, src = L.sym(x), L.sym(src, real.dtype)
    d = dim_index(dim, x.ndim)
    size = x.shape[d]
    first, stop, step = slice(start, end, step).indices(size)
    if step != 1:
        raise Unmappable("slice_scatter with a step other than 1")
    stop = max(stop, first)
    parts = []
    if first > 0:
        parts.append(slice_of(L, x, d, 0, first, 1, x.shape[:d] + (first,) + x.shape[d + 1:]))
    parts.append(src)
    if stop < size:
        parts.append(slice_of(L, x, d, stop, size, 1,
                            x.shape[:d] + (size - stop,) + x.shape[d + 1:]))
    if len(parts) == 1:
        return src
    return L.emit("concat", parts, real.dtype, real.shape, dim=d)


@aten("select_scatter")
def _select_scatter(L, real, x, src, dim, index):
    x = L.sym(x)
    d = dim_index(dim, x.ndim)
    index = index % x.shape[d]
    src = L.reshape(L.sym(src, real.dtype), x.shape[:d] + (1,) + x.shape[d + 1:])
    return _slice_scatter(L, real, x, src, d, index, index + 1, 1)


def _avg_pool_attrs(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override, pooled_shape):
    kernel = pair(kernel_size, 1)
    stride = pair(stride, 0) if stride else kernel
    padding = pair(padding, 0)
    if not count_include_pad and any(padding):
        raise Unmappable("avg_pool2d with count_include_pad=False and padding")
    if ceil_mode and any(
            pooled_shape[2 + i] != (x.shape[2 + i] + 2 * padding[i] - kernel[i]) // stride[i] + 1
            for i in range(2)):
        raise Unmappable("avg_pool2d with ceil_mode whose windows run past the input")
    divisor = divisor_override or kernel[0] * kernel[1]
    return kernel, {"stride": stride, "padding": padding, "dilation": [1, 1],
                    "groups": int(x.shape[1])}, divisor


def _window_ones(L, channels, kernel, dtype):
    return L.constant(torch.ones((channels, 1, kernel[0], kernel[1]), dtype=dtype))


@aten("avg_pool2d")
def _avg_pool2d(L, real, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    """The window sums (a grouped conv2d with a weight of ones: one channel per group, summed in
    kh, kw order as PyTorch's kernel does) divided by the window size."""
    x = L.sym(x)
    if x.ndim != 4:
        raise Unmappable("avg_pool2d of a rank-%d input (only NCHW)" % x.ndim)
    kernel, attrs, divisor = _avg_pool_attrs(x, kernel_size, stride, padding, ceil_mode,
                                             count_include_pad, divisor_override, real.shape)
    sums = L.emit("conv2d", [x, _window_ones(L, x.shape[1], kernel, x.dtype)], x.dtype,
                  real.shape, **attrs)
    return L.emit("div", [sums, L.scalar(divisor, x.dtype)], x.dtype, real.shape)


@aten("avg_pool2d_backward")
def _avg_pool2d_backward(L, real, grad_out, x, kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override):
    """Each input gets the gradient of every window it is in ÷ the window size: conv2d's input
    gradient with the same ones."""
    x, grad_out = L.sym(x), L.sym(grad_out, real.dtype)
    kernel, attrs, divisor = _avg_pool_attrs(x, kernel_size, stride, padding, ceil_mode,
                                             count_include_pad, divisor_override, grad_out.shape)
    share = L.emit("div", [grad_out, L.scalar(divisor, x.dtype)], x.dtype, grad_out.shape)
    return L.emit("conv2d_input_grad", [share, _window_ones(L, x.shape[1], kernel, x.dtype)],
                  x.dtype, real.shape, input_shape=list(x.shape), **attrs)


# ---- losses' special values (PyTorch's, not its decompositions') --------------------------------
@aten("logsumexp")
def _logsumexp(L, real, x, dim, keepdim=False):
    """log Σ exp(x − m) + m with m the row max, and m = 0 where it is ±inf: a row holding +inf
    gives +inf and a row of −inf gives −inf, as PyTorch's kernel (the decomposition gives NaN)."""
    x = L.sym(x, real.dtype)
    dims = [dim_index(d, x.ndim) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    kept = tuple(1 if i in dims else size for i, size in enumerate(x.shape))
    top = L.emit("amax", [x], x.dtype, kept, dims=dims, keepdim=True)
    infinite = L.emit("eq", [L.emit("abs", [top], x.dtype, kept), L.scalar(float("inf"), x.dtype)],
                      torch.bool, kept)
    shift = L.emit("where", [infinite, L.scalar(0.0, x.dtype), top], x.dtype, kept)
    exps = L.emit("exp", [L.emit("sub", [x, shift], x.dtype, x.shape)], x.dtype, x.shape)
    sums = L.emit("sum", [exps], x.dtype, kept, dims=dims, keepdim=True)
    out = L.emit("add", [L.emit("log", [sums], x.dtype, kept), shift], x.dtype, kept)
    return L.reshape(out, real.shape)


@aten("xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")
def _xlogy(L, real, x, y):
    """x·log(y), 0 where x = 0, and NaN wherever y is NaN (PyTorch checks y first)."""
    x, y = L.sym(x, real.dtype), L.sym(y, real.dtype)
    product = L.emit("mul", [x, L.emit("log", [y], real.dtype, y.shape)], real.dtype, real.shape)
    zero = L.emit("eq", [x, L.scalar(0.0, real.dtype)], torch.bool, x.shape)
    value = L.emit("where", [zero, L.scalar(0.0, real.dtype), product], real.dtype, real.shape)
    return L.emit("where", [L.emit("isnan", [y], torch.bool, y.shape), y, value], real.dtype,
                  real.shape)
