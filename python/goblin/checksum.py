"""CRC-32 of a buffer, zlib's polynomial (the `crc32` of docs/protocol.md's tensor frames).

libdeflate's where the machine has it: it folds with carry-less multiplies, about three times
zlib's table loop on a 64 MiB frame here (the node and the volunteers use it too). zlib's
otherwise, and for small buffers, where the call's overhead outweighs the gain. Both give the same
value.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import zlib
from typing import Any, Callable, Optional

import numpy as np

# Below this, zlib's loop is as quick as a foreign call.
_LIBDEFLATE_MIN_BYTES = 1 << 16


def _load_libdeflate() -> Optional[Callable[..., int]]:
    for name in ("libdeflate.so.0", ctypes.util.find_library("deflate")):
        if not name:
            continue
        try:
            function = ctypes.CDLL(name).libdeflate_crc32
        except (OSError, AttributeError):
            continue
        function.restype = ctypes.c_uint32
        function.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        return function
    return None


_libdeflate_crc32 = _load_libdeflate()


def uses_libdeflate() -> bool:
    """Whether large buffers go through libdeflate here."""
    return _libdeflate_crc32 is not None


def crc32(data: Any) -> int:
    """The CRC-32 of a bytes-like object (contiguous; read-only is fine)."""
    view = memoryview(data).cast("B")
    if _libdeflate_crc32 is None or len(view) < _LIBDEFLATE_MIN_BYTES:
        return zlib.crc32(view)
    # The view keeps the buffer alive for the call; ctypes releases the GIL during it.
    address = np.frombuffer(view, dtype=np.uint8).ctypes.data
    return int(_libdeflate_crc32(0, address, len(view)))
