"""Convolution and pooling ops of the numpy reference interpreter: conv2d with its input and weight
gradients, max_pool2d with its indices and backward, in the C++ reference's accumulation order."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

import numpy as np

from .common import Attrs

if TYPE_CHECKING:
    from .common import Array


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


def conv2d(x: Array, w: Array, attrs: Attrs,
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


def conv2d_input_grad(grad: Array, w: Array, attrs: Attrs) -> Array:
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


def conv2d_weight_grad(x: Array, grad: Array, attrs: Attrs) -> Array:
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


def max_pool2d(name: str, args: List[Array], attrs: Attrs) -> Array:
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
