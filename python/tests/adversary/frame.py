"""The tensor frame of docs/protocol.md ("Tensor frame (binary)"), written from the spec alone.

    u64 LE H | H bytes of JSON {"dtype","shape","nbytes","crc32"} | zero padding to 64·k | elements
"""

import json
import struct
import zlib

import numpy as np

DTYPES = {"f32": np.dtype("<f4"), "f64": np.dtype("<f8"), "i32": np.dtype("<i4"),
          "i64": np.dtype("<i8"), "bool": np.dtype("?")}
MAX_HEADER = 4096
MAX_RANK = 8
DEFAULT_MAX_TENSOR_BYTES = 1 << 30
HEADER_KEYS = {"dtype", "shape", "nbytes", "crc32"}


class FrameError(ValueError):
    """A frame that breaks the rules; `code` is the protocol's error code."""

    def __init__(self, code: str, message: str):
        super().__init__("%s: %s" % (code, message))
        self.code = code


def _invalid(message: str) -> FrameError:
    return FrameError("invalid_frame", message)


def dtype_name(dtype) -> str:
    dtype = np.dtype(dtype)
    for name, wire in DTYPES.items():
        if dtype == wire or (dtype.kind == wire.kind and dtype.itemsize == wire.itemsize):
            return name
    raise FrameError("unsupported_dtype", "no wire dtype for %s" % dtype)


def padded(header_length: int) -> int:
    return 64 * -(-(8 + header_length) // 64)


def encode(array) -> bytes:
    """One binary frame holding `array` (C order, little-endian)."""
    array = np.asarray(array)
    name = dtype_name(array.dtype)
    elements = np.ascontiguousarray(array, dtype=DTYPES[name]).tobytes()
    header = json.dumps({"dtype": name, "shape": [int(d) for d in array.shape],
                         "nbytes": len(elements), "crc32": zlib.crc32(elements)},
                        separators=(",", ":")).encode("utf-8")
    start = padded(len(header))
    return (struct.pack("<Q", len(header)) + header + b"\0" * (start - 8 - len(header))
            + elements)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _header(frame: bytes) -> dict:
    if len(frame) < 8:
        raise _invalid("shorter than its length prefix")
    (length,) = struct.unpack_from("<Q", frame, 0)
    if not 1 <= length <= MAX_HEADER:
        raise _invalid("header length %d is outside 1..%d" % (length, MAX_HEADER))
    if len(frame) < 8 + length:
        raise _invalid("the header is cut short")
    try:
        header = json.loads(frame[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _invalid("the header is not UTF-8 JSON (%s)" % type(exc).__name__)
    if not isinstance(header, dict):
        raise _invalid("the header is not an object")
    if set(header) != HEADER_KEYS:
        raise _invalid("header keys must be exactly %s" % sorted(HEADER_KEYS))
    return dict(header, _length=length)


def _shape(header: dict) -> list:
    shape = header["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        raise _invalid("shape must be a list of at most %d dims" % MAX_RANK)
    if not all(_is_int(d) and d >= 0 for d in shape):
        raise _invalid("shape dims must be non-negative integers")
    return shape


def decode(frame: bytes, max_tensor_bytes: int = DEFAULT_MAX_TENSOR_BYTES) -> np.ndarray:
    """The array of one frame; raises FrameError for anything the spec refuses."""
    frame = bytes(frame)
    header = _header(frame)
    name = header["dtype"]
    if not isinstance(name, str) or name not in DTYPES:
        raise _invalid("unknown dtype %r" % (name,))
    shape = _shape(header)
    nbytes, crc = header["nbytes"], header["crc32"]
    if not _is_int(nbytes) or nbytes < 0 or not _is_int(crc) or not 0 <= crc < 1 << 32:
        raise _invalid("nbytes and crc32 must be integers (crc32 of 32 bits)")
    count = 1
    for dim in shape:
        count *= dim
    if nbytes != count * DTYPES[name].itemsize:
        raise _invalid("nbytes %d does not match shape %s of %s" % (nbytes, shape, name))
    if nbytes > max_tensor_bytes:
        raise FrameError("limit_exceeded", "%d bytes of elements is over the limit" % nbytes)
    start = padded(header["_length"])
    if len(frame) != start + nbytes:
        raise _invalid("frame is %d bytes, expected %d" % (len(frame), start + nbytes))
    if any(frame[8 + header["_length"]:start]):
        raise _invalid("the padding is not zero")
    elements = frame[start:]
    if zlib.crc32(elements) != crc:
        raise _invalid("crc32 mismatch")
    array = np.frombuffer(elements, DTYPES[name]).reshape(shape)
    if name == "bool" and np.any(np.frombuffer(elements, np.uint8) > 1):
        raise _invalid("a bool element is neither 0 nor 1")
    return array.astype(array.dtype.newbyteorder("="), copy=False)
