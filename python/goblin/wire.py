"""The binary tensor frame of docs/protocol.md.

    u64 LE header length H (1..4096) | H bytes of JSON header | zero padding to a multiple of 64 |
    nbytes bytes of little-endian C-order elements

encode_tensor_frame() builds one; decode_tensor_frame() checks every rule before it touches the
elements and then views them without copying.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Tuple, Union

import numpy as np

from .checksum import crc32
from .errors import FrameError

if TYPE_CHECKING:
    from numpy.typing import NDArray

FRAME_ALIGNMENT = 64
MAX_HEADER_BYTES = 4096
MAX_RANK = 8
DEFAULT_MAX_TENSOR_BYTES = 1 << 30
_INT64_MAX = (1 << 63) - 1
_HEADER_KEYS = frozenset(("dtype", "shape", "nbytes", "crc32"))

#: Wire dtype name -> numpy dtype (always little-endian).
WIRE_DTYPES: Dict[str, np.dtype] = {
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "bool": np.dtype("?"),
}

Buffer = Union[bytes, bytearray, memoryview]
# A frame to send: whole, or in parts that travel as fragments of one WebSocket message.
OutgoingFrame = Union[bytes, Tuple[bytes, memoryview]]


def wire_dtype_name(dtype: np.dtype) -> str:
    """The wire name ("f32", ...) of a numpy dtype; FrameError for one no frame can carry."""
    dtype = np.dtype(dtype)
    for name, wire in WIRE_DTYPES.items():
        if dtype.kind == wire.kind and dtype.itemsize == wire.itemsize:
            return name
    raise FrameError("dtype %s cannot travel in a tensor frame (f32, f64, i32, i64, bool only)"
                     % dtype)


def data_offset(header_length: int) -> int:
    """Where the elements start: 8 + H rounded up to a multiple of 64."""
    unpadded = 8 + header_length
    return (unpadded + FRAME_ALIGNMENT - 1) // FRAME_ALIGNMENT * FRAME_ALIGNMENT


def tensor_frame_parts(array: NDArray[Any]) -> Tuple[bytes, memoryview]:
    """One tensor frame in two parts: the length, header and padding, then the elements, a view of
    the array's own bytes (the array made little-endian and C-contiguous first when it is not).
    Sent as two fragments of one WebSocket message, a large tensor is never copied into a frame."""
    array = np.asarray(array)
    name = wire_dtype_name(array.dtype)
    if array.ndim > MAX_RANK:
        raise FrameError("rank %d is over the limit of %d" % (array.ndim, MAX_RANK))
    array = np.asarray(array, dtype=WIRE_DTYPES[name], order="C")  # keeps 0-d arrays 0-d
    elements = array.reshape(-1).view(np.uint8).data
    header = json.dumps(
        {"dtype": name, "shape": list(array.shape), "nbytes": array.nbytes,
         "crc32": crc32(elements)},
        separators=(",", ":")).encode("utf-8")
    padding = data_offset(len(header)) - 8 - len(header)
    return b"".join((struct.pack("<Q", len(header)), header, bytes(padding))), elements


def encode_tensor_frame(array: NDArray[Any]) -> bytes:
    """One tensor frame holding `array` (made little-endian and C-contiguous when it is not)."""
    return b"".join(tensor_frame_parts(array))


def _fail(message: str) -> FrameError:
    return FrameError(message, code="invalid_frame")


def _reject_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _fail("tensor header repeats a key")
    return dict(pairs)


def _non_negative_int(value: object) -> bool:
    # bool is an int subclass in Python; JSON true/false are not numbers.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX


def _parse_header(raw: memoryview) -> Dict[str, Any]:
    try:
        text = bytes(raw).decode("utf-8")
        header = json.loads(text, object_pairs_hook=_reject_duplicates)
    except FrameError:
        raise
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError too
        raise _fail("tensor header is not UTF-8 JSON: %s" % exc) from None
    if not isinstance(header, dict):
        raise _fail("tensor header is not a JSON object")
    if set(header) != _HEADER_KEYS:
        raise _fail("tensor header must have exactly dtype, shape, nbytes and crc32, not %s"
                    % sorted(header))
    dtype = header["dtype"]
    if not isinstance(dtype, str) or dtype not in WIRE_DTYPES:
        raise _fail("unknown dtype %r" % (dtype,))
    shape = header["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        raise _fail("tensor header shape must be a list of at most %d dimensions" % MAX_RANK)
    if not all(_non_negative_int(dim) for dim in shape):
        raise _fail("tensor header shape %r holds a value that is not a non-negative integer"
                    % (shape,))
    if not _non_negative_int(header["nbytes"]):
        raise _fail("tensor header nbytes is not a non-negative integer")
    crc = header["crc32"]
    if not _non_negative_int(crc) or crc > 0xFFFFFFFF:
        raise _fail("tensor header crc32 is not a 32-bit unsigned integer")
    return header


def decode_tensor_frame(frame: Buffer,
                        max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES) -> NDArray[Any]:
    """The tensor in `frame`, checked against every rule of docs/protocol.md.

    The checks run in the same order as the C++ decoder: length field, header, nbytes against the
    shape, the tensor limit (FrameError with code "limit_exceeded"), the frame length, the padding,
    the checksum. The result views `frame` without copying; it is read-only when `frame` is bytes.
    """
    view = memoryview(frame).cast("B")
    if len(view) < 8:
        raise _fail("tensor frame is shorter than its 8-byte length field")
    (header_length,) = struct.unpack_from("<Q", view, 0)
    if not 1 <= header_length <= MAX_HEADER_BYTES:
        raise _fail("tensor header length %d is outside 1..%d" % (header_length, MAX_HEADER_BYTES))
    if len(view) < 8 + header_length:
        raise _fail("tensor frame is truncated inside its header")
    header = _parse_header(view[8:8 + header_length])
    dtype = WIRE_DTYPES[header["dtype"]]
    shape: List[int] = header["shape"]
    count = 1
    for dim in shape:
        count *= dim
    expected = count * dtype.itemsize
    if expected > _INT64_MAX:
        raise _fail("tensor byte size overflows")
    if header["nbytes"] != expected:
        raise _fail("tensor header nbytes %d disagrees with its shape and dtype (%d bytes)"
                    % (header["nbytes"], expected))
    if expected > max_tensor_bytes:
        raise FrameError("tensor of %d bytes is over the limit of %d"
                         % (expected, max_tensor_bytes), code="limit_exceeded")
    offset = data_offset(header_length)
    if len(view) != offset + expected:
        raise _fail("tensor frame length %d should be %d" % (len(view), offset + expected))
    if any(view[8 + header_length:offset]):
        raise _fail("tensor frame padding is not zero")
    elements = view[offset:]
    if crc32(elements) != header["crc32"]:
        raise _fail("tensor frame checksum mismatch")
    if count == 0:
        return np.empty(tuple(shape), dtype=dtype)
    array = np.frombuffer(view, dtype=dtype, count=count, offset=offset)
    if dtype.kind == "b" and np.frombuffer(elements, np.uint8).max() > 1:
        raise _fail("bool tensor holds a byte that is neither 0 nor 1")
    return array.reshape(tuple(shape))
