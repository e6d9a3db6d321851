"""The catalog's counter-based random numbers: Philox4x32-10 and the dropout_mask op built on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Tuple

import numpy as np

from ..graph import DTYPES
from .common import Attrs

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .common import Array


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
    return dropout_mask_from_attrs({"shape": list(shape), "p": p, "seed": seed,
                                    "offset": offset, "dtype": dtype})


def dropout_mask_from_attrs(attrs: Attrs) -> Array:
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
