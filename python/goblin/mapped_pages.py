"""Pages of a researcher's numpy.memmap that the client has finished with, handed back.

Reading A from a memmap (or writing C into one) block by block maps every page it touches, and
the kernel keeps them mapped in this process: a 4 GiB input read through would count 4 GiB in the
client's resident size. After each block the client drops that block's pages from its mapping
(madvise MADV_DONTNEED). For a shared file mapping (memmap modes 'r', 'r+', 'w+') this loses
nothing: the data stays in the page cache (written pages stay dirty there and reach the file as
usual) and a later access simply maps it again. A copy-on-write memmap (mode 'c') keeps its pages:
there, dropping them would discard the researcher's changes.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any, Optional

import numpy as np

_MADV_DONTNEED = 4  # Linux
_SHARED_MODES = ("r", "r+", "w+", "readonly", "readwrite", "write")


def _madvise() -> Optional[Any]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    function.restype = ctypes.c_int
    return function


_MADVISE = _madvise()


def release_rows(X: Any, row0: int, count: int) -> bool:
    """Drops rows [row0, row0 + count) of X from this process's memory when X is a C-contiguous
    numpy.memmap on a shared mapping; returns whether it did. Anything else is left alone."""
    if _MADVISE is None or not isinstance(X, np.memmap) or count <= 0:
        return False
    if getattr(X, "_mmap", None) is None or X.mode not in _SHARED_MODES or \
            not X.flags.c_contiguous or X.ndim < 1:
        return False
    row_bytes = X.strides[0]
    start = X.ctypes.data + row0 * row_bytes
    end = start + count * row_bytes
    page = mmap.PAGESIZE
    # The whole pages the rows touch; a page shared with a neighbouring row is simply mapped
    # again when it is read. The mapping starts page-aligned and covers every page of X. Reading
    # rows maps pages around them too (fault-around, large folios): callers going through X in
    # order release everything up to the end of the rows they are done with.
    first = start - start % page
    last = end + (-end) % page
    return _MADVISE(first, last - first, _MADV_DONTNEED) == 0


__all__ = ["release_rows"]
