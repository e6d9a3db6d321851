"""Local checks of matmul arguments, run before anything is uploaded.

The node checks the same rules (docs/protocol.md, "Rules for submit_matmul"); checking here first
gives a clear Python exception without a round trip and without uploading gigabytes for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

import numpy as np

from .errors import DTypeError, InputError, ShapeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

MATMUL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _describe(name: str, array: NDArray[Any]) -> str:
    return "%s has shape %s" % (name, tuple(array.shape))


def _check_array(name: str, array: object) -> None:
    if not isinstance(array, np.ndarray):
        raise DTypeError("%s must be a numpy.ndarray, got %s" % (name, type(array).__name__))
    if array.ndim != 2:
        raise ShapeError("%s must be a 2-D matrix, but %s (%d-D)"
                         % (name, _describe(name, array), array.ndim))
    # Byte order does not matter here: the frame encoder writes little-endian.
    if array.dtype.newbyteorder("=") not in MATMUL_DTYPES:
        raise DTypeError("%s has dtype %s; matmul takes float32 or float64 (convert with "
                         "%s.astype(numpy.float32))" % (name, array.dtype, name))


# Why each operation refuses NaN and Inf; run() and train() take them with allow_nonfinite=True.
WHY_FINITE = {
    "matmul": "matmul() refuses non-finite values (its Freivalds check needs finite ones)",
    "run": "run() refuses non-finite values unless allow_nonfinite=True",
    "train": "train() refuses non-finite values unless allow_nonfinite=True",
}


def nonfinite_error(name: str, index: Tuple[int, ...], value: float,
                    operation: str) -> InputError:
    """The one error for NaN or Inf in an input, whatever the operation."""
    return InputError("%s holds NaN or Inf (first at index %s): %r; %s"
                      % (name, index, value, WHY_FINITE[operation]))


def check_finite(name: str, array: NDArray[Any], operation: str, row0: int = 0) -> None:
    """InputError (nonfinite_error) when a floating-point `array` holds NaN or Inf; `row0` is the
    array's first row in the input it is a block of. Other dtypes pass."""
    if array.size == 0 or not np.issubdtype(array.dtype, np.floating):
        return
    # min/max propagate NaN and expose +-Inf without allocating a mask of the whole array.
    if np.isfinite(array.min()) and np.isfinite(array.max()):
        return
    bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
    value = array[bad].item()
    if array.ndim:
        bad = (bad[0] + row0,) + bad[1:]
    raise nonfinite_error(name, bad, value, operation)


def validate_matmul_inputs(A: NDArray[Any], B: NDArray[Any]) -> Tuple[NDArray[Any], NDArray[Any]]:
    """Checks A (m×k) and B (k×n) for matmul and returns them C-contiguous.

    Raises DTypeError (a TypeError) for a non-array or a dtype other than float32/float64 or
    differing dtypes, ShapeError (a ValueError) for a non-2-D array, differing inner sizes or a zero
    dimension, and InputError (a ValueError) for NaN or Inf. Non-contiguous arrays (slices,
    transposes, Fortran order) are copied to C order, not refused.
    """
    _check_array("A", A)
    _check_array("B", B)
    if A.dtype.newbyteorder("=") != B.dtype.newbyteorder("="):
        raise DTypeError("A is %s but B is %s; both must be float32 or both float64"
                         % (A.dtype, B.dtype))
    if A.shape[1] != B.shape[0]:
        raise ShapeError("A has shape %s and B has shape %s: inner sizes %d and %d differ"
                         % (tuple(A.shape), tuple(B.shape), A.shape[1], B.shape[0]))
    for name, array in (("A", A), ("B", B)):
        if 0 in array.shape:
            raise ShapeError("empty matrices are refused: %s" % _describe(name, array))
    check_finite("A", A, "matmul")
    check_finite("B", B, "matmul")
    return np.ascontiguousarray(A), np.ascontiguousarray(B)


def check_tile(tile: Optional[Sequence[int]]) -> Optional[Tuple[int, int]]:
    """None, or (rows, cols) of a C tile as two positive integers; InputError otherwise."""
    if tile is None:
        return None
    try:
        rows, cols = tile
    except (TypeError, ValueError):
        raise InputError("tile must be [rows, cols], got %r" % (tile,)) from None
    for value in (rows, cols):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                or value < 1:
            raise InputError("tile must be two positive integers, got %r" % (tile,))
    return int(rows), int(cols)
