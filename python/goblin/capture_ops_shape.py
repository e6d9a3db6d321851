"""Aten shape, indexing, creation and matmul ops → catalog ops (handlers for goblin.capture;
registered into capture_ops.HANDLERS)."""

import torch

from .capture_lowering import FOLD_LIMIT, Multi, Unmappable
from .capture_ops import HANDLERS, dim_index, aten


# ---- no-ops and reshapes ----------------------------------------------------------------------
@aten("clone", "detach", "alias", "contiguous", "lift_fresh_copy", "lift_fresh", "lift",
      "alias_copy", "detach_copy", "positive")
def _identity(L, real, x, *args, **kwargs):
    return L.sym(x)


@aten("view", "_unsafe_view", "reshape", "_reshape_alias", "view_copy", "_reshape_alias_copy",
      "squeeze", "squeeze_copy", "unsqueeze", "unsqueeze_copy", "flatten", "unflatten", "view_as")
def _to_shape(L, real, x, *args, **kwargs):
    return L.reshape(x, real.shape)


@aten("_to_copy", "to", "type_as")
def _to_dtype(L, real, x, *args, **kwargs):
    return L.cast(L.sym(x), real.dtype)


@aten("permute", "permute_copy")
def _permute(L, real, x, dims):
    x = L.sym(x)
    dims = [dim_index(d, x.ndim) for d in dims]
    # A permute of a permute's result is one permute of its argument (none when they cancel, as
    # a linear layer's backward transposes the transposed weight): the same elements, copied once.
    if x.value.id in L.permuted:
        x, first = L.permuted[x.value.id]
        dims = [first[d] for d in dims]
    if dims == list(range(x.ndim)):
        return x
    out = L.emit("permute", [x], x.dtype, real.shape, dims=dims)
    L.permuted[out.value.id] = (x, dims)
    return out


@aten("t", "t_copy", "numpy_T")
def _t(L, real, x):
    x = L.sym(x)
    return _permute(L, real, x, list(reversed(range(x.ndim))))


@aten("transpose.int", "transpose_copy.int")
def _transpose(L, real, x, dim0, dim1):
    x = L.sym(x)
    dims = list(range(x.ndim))
    a, b = dim_index(dim0, x.ndim), dim_index(dim1, x.ndim)
    dims[a], dims[b] = dims[b], dims[a]
    return _permute(L, real, x, dims)


@aten("expand", "expand_copy")
def _expand(L, real, x, size, implicit=False):
    x = L.sym(x)
    if x.shape == tuple(real.shape):
        return x
    return L.emit("expand", [x], x.dtype, real.shape, shape=list(real.shape))


@aten("copy", "copy_")  # copy_ only where Lowering found the overwritten value private
def _copy(L, real, destination, source, non_blocking=False):
    return _expand(L, real, L.sym(source, real.dtype), list(real.shape))


# ---- slicing and joining ----------------------------------------------------------------------
def slice_of(L, x, dim, start, end, step, shape):
    d = dim_index(dim, x.ndim)
    first, stop, step = slice(start, end, step).indices(x.shape[d])
    if (first, step) == (0, 1) and stop >= x.shape[d]:
        return x
    return L.emit("slice", [x], x.dtype, shape, dim=d, start=first, end=max(stop, first),
                  step=step)


@aten("slice.Tensor", "slice_copy.Tensor")
def _slice_tensor(L, real, x, dim=0, start=None, end=None, step=1):
    return slice_of(L, L.sym(x), dim, start, end, step, real.shape)


@aten("select.int", "select_copy.int")
def _select(L, real, x, dim, index):
    x = L.sym(x)
    d = dim_index(dim, x.ndim)
    index = index % x.shape[d]
    shape = x.shape[:d] + (1,) + x.shape[d + 1:]
    return L.reshape(slice_of(L, x, d, index, index + 1, 1, shape), real.shape)


def _pieces(L, real, x, dim, squeeze=False):
    x = L.sym(x)
    d = dim_index(dim, x.ndim)
    makers, offset = [], 0
    for piece in real:
        length = 1 if squeeze else piece.shape[d]
        shape = x.shape[:d] + (length,) + x.shape[d + 1:]

        def make(start=offset, length=length, shape=shape, final=tuple(piece.shape)):
            return L.reshape(slice_of(L, x, d, start, start + length, 1, shape), final)
        makers.append(make)
        offset += length
    return Multi(makers)


@aten("split.Tensor", "split_with_sizes", "split_copy.Tensor", "split_with_sizes_copy")
def _split(L, real, x, sizes, dim=0):
    return _pieces(L, real, x, dim)


@aten("unbind.int", "unbind_copy.int")
def _unbind(L, real, x, dim=0):
    return _pieces(L, real, x, dim, squeeze=True)


@aten("cat")
def _cat(L, real, tensors, dim=0):
    parts = [L.sym(t, real.dtype) for t in tensors]
    if real.ndim > 1:
        parts = [p for p in parts if p.shape != (0,)]  # torch's legacy empty 1-D operands
    d = dim_index(dim, real.ndim)
    while len(parts) > 8:
        head = parts[:8]
        length = sum(p.shape[d] for p in head)
        shape = head[0].shape[:d] + (length,) + head[0].shape[d + 1:]
        parts = [L.emit("concat", head, real.dtype, shape, dim=d)] + parts[8:]
    if len(parts) == 1:
        return parts[0]
    return L.emit("concat", parts, real.dtype, real.shape, dim=d)


@aten("constant_pad_nd")
def _pad(L, real, x, pad, value=0):
    x = L.sym(x)
    if not any(pad):
        return x
    return L.emit("pad", [x], x.dtype, real.shape, pads=list(pad),
                  value=float(value) if x.dtype.is_floating_point else int(value))


# ---- indexing ---------------------------------------------------------------------------------
@aten("index_select")
def _index_select(L, real, x, dim, index):
    x = L.sym(x)
    return L.emit("index_select", [x, L.sym(index)], x.dtype, real.shape, dim=dim_index(dim, x.ndim))


@aten("gather")
def _gather(L, real, x, dim, index, sparse_grad=False):
    x = L.sym(x)
    return L.emit("gather", [x, L.sym(index)], x.dtype, real.shape, dim=dim_index(dim, x.ndim))


@aten("embedding")
def _embedding(L, real, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    weight = L.sym(weight)
    return L.emit("embedding", [weight, L.sym(indices)], weight.dtype, real.shape)


@aten("one_hot")
def _one_hot(L, real, x, num_classes=-1):
    """aten.one_hot, and goblin_capture.one_hot that capture puts in its place while tracing."""
    return L.emit("one_hot", [L.sym(x)], torch.int64, real.shape, num_classes=real.shape[-1])


@aten("index_add")
def _index_add(L, real, x, dim, index, source, alpha=1):
    x = L.sym(x)
    attrs = {"dim": dim_index(dim, x.ndim)}
    if alpha != 1:
        attrs["alpha"] = alpha
    return L.emit("index_add", [x, L.sym(index), L.sym(source, x.dtype)], x.dtype, real.shape,
                  **attrs)


@aten("index.Tensor")
def _index(L, real, x, indices):
    x = L.sym(x)
    used = [i for i, index in enumerate(indices) if index is not None]
    if len(used) != 1 or any(index is not None for index in indices[:used[0]]):
        raise Unmappable("advanced indexing with several index tensors")
    index = L.sym(indices[used[0]])
    if index.dtype not in (torch.int64, torch.int32):
        raise Unmappable("indexing with a boolean mask (data-dependent shape)")
    flat = L.reshape(index, (_numel(index.shape),))
    d = used[0]
    shape = x.shape[:d] + flat.shape + x.shape[d + 1:]
    picked = L.emit("index_select", [x, flat], x.dtype, shape, dim=d)
    return L.reshape(picked, real.shape)


def _numel(shape):
    count = 1
    for d in shape:
        count *= d
    return count


# ---- values that depend only on shapes --------------------------------------------------------
@aten("zeros_like", "ones_like", "full_like", "empty_like", "new_zeros", "new_ones", "new_full",
      "new_empty", "fill", "zeros", "ones", "full", "empty", "scalar_tensor")
def _uniform(L, real, *args, **kwargs):
    """A tensor whose every element is the same: a constant, or a 0-d constant expanded."""
    if real.numel() <= FOLD_LIMIT:
        return real
    value = L.scalar(real.reshape(-1)[0].item(), real.dtype)
    return L.emit("expand", [value], real.dtype, real.shape, shape=list(real.shape))


# ---- matmul -----------------------------------------------------------------------------------
@aten("mm", "bmm", "matmul")
def _matmul(L, real, a, b):
    a, b = L.sym(a, real.dtype), L.sym(b, real.dtype)
    left = L.reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    right = L.reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if left.ndim < 2 or right.ndim < 2:
        raise Unmappable("matmul of 0-d tensors")
    shape = _matmul_shape(left.shape, right.shape)
    return L.reshape(L.emit("matmul", [left, right], real.dtype, shape), real.shape)


def _matmul_shape(a, b):
    batch = torch.broadcast_shapes(a[:-2], b[:-2])
    return tuple(batch) + (a[-2], b[-1])


aten("mv", "dot")(_matmul)


@aten("addmm", "baddbmm")
def _addmm(L, real, bias, a, b, beta=1, alpha=1):
    product = _matmul(L, real, a, b)
    if alpha != 1:
        product = L.emit("mul", [product, L.scalar(alpha, real.dtype)], real.dtype, real.shape)
    if beta == 0:
        return product
    bias = L.sym(bias, real.dtype)
    if beta != 1:
        bias = L.emit("mul", [bias, L.scalar(beta, real.dtype)], real.dtype, bias.shape)
    return L.emit("add", [product, bias], real.dtype, real.shape)


@aten("stack")
def _stack(L, real, tensors, dim=0):
    d = dim % real.ndim
    parts = []
    for tensor in tensors:
        part = L.sym(tensor, real.dtype)
        parts.append(L.reshape(part, part.shape[:d] + (1,) + part.shape[d:]))
    return _cat(L, real, parts, d)


HANDLERS["goblin_capture.one_hot"] = _one_hot
