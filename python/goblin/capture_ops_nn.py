"""Aten neural-network ops → catalog ops (layer norm, batch norm, convolution, max pooling and
their backward ops): handlers for goblin.capture, registered into capture_ops.HANDLERS."""

import torch

from .capture_lowering import Multi, Unmappable, wire
from .capture_ops import HANDLERS, aten


def _filled(L, value, dtype, shape):
    return L.constant(torch.full(tuple(shape), value, dtype=dtype))


# ---- layer norm -------------------------------------------------------------------------------
@aten("native_layer_norm")
def _layer_norm(L, real, x, normalized_shape, weight, bias, eps):
    x = L.sym(x)
    n = len(normalized_shape)
    dims = list(range(x.ndim - n, x.ndim))
    weight = _filled(L, 1, x.dtype, normalized_shape) if weight is None else L.sym(weight, x.dtype)
    bias = _filled(L, 0, x.dtype, normalized_shape) if bias is None else L.sym(bias, x.dtype)

    def rstd():
        var = L.emit("var", [x], x.dtype, real[2].shape, dims=dims, keepdim=True, correction=0)
        shifted = L.emit("add", [var, L.scalar(eps, x.dtype)], x.dtype, real[2].shape)
        out = L.emit("rsqrt", [shifted], x.dtype, real[2].shape)
        L.notes[id(out)] = ("layer_norm_eps", eps)
        return out
    return Multi([
        lambda: L.emit("layer_norm", [x, weight, bias], x.dtype, real[0].shape,
                       normalized_ndim=n, eps=float(eps)),
        lambda: L.emit("mean", [x], x.dtype, real[1].shape, dims=dims, keepdim=True),
        rstd])


@aten("native_layer_norm_backward")
def _layer_norm_backward(L, real, grad_out, x, normalized_shape, mean, rstd, weight, bias,
                         output_mask):
    x, grad_out = L.sym(x), L.sym(grad_out)
    note = L.notes.get(id(rstd)) if rstd is not None else None
    if note is None or note[0] != "layer_norm_eps":
        raise Unmappable("layer norm backward whose rstd does not come from a captured layer norm")
    eps = float(note[1])
    n = len(normalized_shape)
    weight = _filled(L, 1, x.dtype, normalized_shape) if weight is None else L.sym(weight)

    def gradient(index, output):
        if real[index] is None:
            return None
        return L.emit("layer_norm_backward", [grad_out, x, weight], x.dtype, real[index].shape,
                      normalized_ndim=n, eps=eps, output=output)
    return Multi([lambda: gradient(0, "input"), lambda: gradient(1, "weight"),
                  lambda: gradient(2, "bias")])


# ---- dropout ----------------------------------------------------------------------------------
def _dropout_mask(L, real, like, p, offset):
    """goblin_capture.dropout_mask, which capture puts in place of F.dropout in training mode:
    the catalog's dropout_mask, seed 0 (the node sets each round's)."""
    return L.emit("dropout_mask", [], real.dtype, real.shape, shape=[int(d) for d in real.shape],
                  p=float(p), seed=0, offset=int(offset), dtype=wire(real.dtype))


HANDLERS["goblin_capture.dropout_mask"] = _dropout_mask


# ---- batch norm -------------------------------------------------------------------------------
@aten("native_batch_norm")
def _batch_norm(L, real, x, weight, bias, running_mean, running_var, training, momentum, eps):
    x = L.sym(x)
    channels = x.shape[1]
    broadcast = (1, channels) + (1,) * (x.ndim - 2)
    weight = torch.ones(channels, dtype=x.dtype) if weight is None else weight
    bias = torch.zeros(channels, dtype=x.dtype) if bias is None else bias
    if training:
        raise Unmappable("batch norm in training mode: its batch statistics differ per micro-batch; "
                         "use GroupNorm or LayerNorm to train, or call module.eval() to capture "
                         "inference")
    if not all(isinstance(t, torch.Tensor) for t in (weight, bias, running_mean, running_var)):
        raise Unmappable("batch norm whose statistics or affine parameters are computed")
    # PyTorch's CPU inference kernel: y = x * alpha + beta, alpha = w / sqrt(var + eps).
    alpha = weight / torch.sqrt(running_var + eps)
    beta = bias - running_mean * alpha
    scaled = L.emit("mul", [x, L.constant(alpha.reshape(broadcast))], x.dtype, x.shape)
    return Multi([lambda: L.emit("add", [scaled, L.constant(beta.reshape(broadcast))], x.dtype,
                                 real[0].shape),
                  lambda: real[1], lambda: real[2]])


# ---- convolution ------------------------------------------------------------------------------
def pair(values, fill):
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    if not values:
        return [fill, fill]
    return values * 2 if len(values) == 1 else values


@aten("convolution")
def _convolution(L, real, x, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    if transposed:
        raise Unmappable("transposed convolution")
    x, weight = L.sym(x, real.dtype), L.sym(weight, real.dtype)
    if x.ndim == 3:  # conv1d: a convolution over a height-1 image
        x = L.reshape(x, x.shape[:2] + (1,) + x.shape[2:])
        weight = L.reshape(weight, weight.shape[:2] + (1,) + weight.shape[2:])
        stride, padding, dilation = [1] + list(stride), [0] + list(padding), [1] + list(dilation)
        shape = real.shape[:2] + (1,) + real.shape[2:]
    elif x.ndim == 4:
        shape = tuple(real.shape)
    else:
        raise Unmappable("convolution of rank %d (only conv1d and conv2d)" % x.ndim)
    out = L.emit("conv2d", [x, weight], real.dtype, shape, stride=pair(stride, 1),
                 padding=pair(padding, 0), dilation=pair(dilation, 1), groups=int(groups))
    out = L.reshape(out, real.shape)
    if bias is None:
        return out
    bias = L.reshape(L.sym(bias, real.dtype), (1, real.shape[1]) + (1,) * (len(real.shape) - 2))
    return L.emit("add", [out, bias], real.dtype, real.shape)


@aten("convolution_backward")
def _convolution_backward(L, real, grad_out, x, weight, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask):
    grad_out, x, weight = L.sym(grad_out), L.sym(x), L.sym(weight)
    if transposed or x.ndim != 4:
        raise Unmappable("convolution backward other than conv2d")
    attrs = {"stride": pair(stride, 1), "padding": pair(padding, 0),
             "dilation": pair(dilation, 1), "groups": int(groups)}

    def input_grad():
        return L.emit("conv2d_input_grad", [grad_out, weight], x.dtype, x.shape,
                      input_shape=list(x.shape), **attrs) if real[0] is not None else None

    def weight_grad():
        return L.emit("conv2d_weight_grad", [x, grad_out], x.dtype, weight.shape,
                      weight_shape=list(weight.shape), **attrs) if real[1] is not None else None

    def bias_grad():
        return L.emit("sum", [grad_out], x.dtype, real[2].shape, dims=[0, 2, 3],
                      keepdim=False) if real[2] is not None else None
    return Multi([input_grad, weight_grad, bias_grad])


# ---- max pooling ------------------------------------------------------------------------------
def _pool_attrs(kernel_size, stride, padding, dilation, ceil_mode):
    kernel = pair(kernel_size, 1)
    return {"kernel": kernel, "stride": pair(stride, 0) if stride else kernel,
            "padding": pair(padding, 0), "dilation": pair(dilation, 1),
            "ceil_mode": bool(ceil_mode)}


@aten("max_pool2d_with_indices")
def _max_pool2d(L, real, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    x = L.sym(x)
    attrs = _pool_attrs(kernel_size, stride, padding, dilation, ceil_mode)
    return Multi([lambda: L.emit("max_pool2d", [x], x.dtype, real[0].shape, **attrs),
                  lambda: L.emit("max_pool2d_indices", [x], torch.int64, real[1].shape, **attrs)])


@aten("max_pool2d_with_indices_backward")
def _max_pool2d_backward(L, real, grad_out, x, kernel_size, stride, padding, dilation, ceil_mode,
                         indices):
    x = L.sym(x)
    attrs = _pool_attrs(kernel_size, stride, padding, dilation, ceil_mode)
    return L.emit("max_pool2d_backward", [L.sym(grad_out, x.dtype), x], x.dtype, real.shape,
                  **attrs)
