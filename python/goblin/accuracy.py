"""How far a matmul result is from the exact product, measured against the sound error bound.

For C = A·B computed in floating point with unit roundoff u and inner size K, every element obeys
|C - A·B| <= gamma_K(u) · (|A|·|B|) with gamma_K(u) = K·u / (1 - K·u), whatever the summation
order. The reference here is computed in float64, whose own error is added to the bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}


def gamma(k: int, u: float) -> float:
    """gamma_k(u) = k·u / (1 - k·u); infinite when k·u >= 1."""
    ku = k * u
    return ku / (1.0 - ku) if ku < 1.0 else float("inf")


def matmul_error(A: NDArray[Any], B: NDArray[Any], C: NDArray[Any]) -> Dict[str, float]:
    """max_abs_error and max_bound_ratio (largest |C - A·B| / bound, elementwise) of C.

    max_bound_ratio <= 1 means every element is within the sound bound of the dtype of C; an
    element whose bound is zero counts as infinitely far off unless it is exact.
    """
    if C.shape != (A.shape[0], B.shape[1]):
        return {"max_abs_error": float("inf"), "max_bound_ratio": float("inf")}
    a64 = A.astype(np.float64)
    b64 = B.astype(np.float64)
    k = A.shape[1]
    exact = a64 @ b64
    # The float64 reference and the bound itself carry float64 rounding: add it on top.
    coefficient = gamma(k, UNIT_ROUNDOFF[np.dtype(C.dtype)]) + 2.0 * gamma(k, 2.0 ** -53)
    bound = coefficient * (np.abs(a64) @ np.abs(b64))
    error = np.abs(C.astype(np.float64) - exact)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(bound > 0, error / np.where(bound > 0, bound, 1.0),
                         np.where(error > 0, np.inf, 0.0))
    ratio = np.where(np.isnan(error), np.inf, ratio)
    return {"max_abs_error": float(np.max(error)) if error.size else 0.0,
            "max_bound_ratio": float(np.max(ratio)) if ratio.size else 0.0}
