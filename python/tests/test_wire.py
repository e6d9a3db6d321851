"""The Python tensor frame codec: the shared vectors of tests/vectors, and round trips."""

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from goblin.errors import FrameError
from goblin.wire import (WIRE_DTYPES, data_offset, decode_tensor_frame, encode_tensor_frame,
                         tensor_frame_parts)

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))["vectors"]
TEST_LIMIT = 1 << 30  # the limit the C++ test decodes with, too


def test_manifest_has_both_kinds():
    kinds = {entry["expect"] for entry in MANIFEST}
    assert kinds == {"ok", "error"}
    assert any(entry.get("code") == "limit_exceeded" for entry in MANIFEST)


@pytest.mark.parametrize("entry", [e for e in MANIFEST if e["expect"] == "ok"],
                         ids=lambda e: e["file"])
def test_vector_decodes(entry):
    frame = (VECTORS / entry["file"]).read_bytes()
    array = decode_tensor_frame(frame, TEST_LIMIT)
    expected = np.array(entry["values"], dtype=WIRE_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    assert array.dtype == WIRE_DTYPES[entry["dtype"]]
    assert list(array.shape) == entry["shape"]
    np.testing.assert_array_equal(array, expected)


@pytest.mark.parametrize("entry", [e for e in MANIFEST if e["expect"] == "error"],
                         ids=lambda e: e["file"])
def test_vector_is_refused(entry):
    frame = (VECTORS / entry["file"]).read_bytes()
    with pytest.raises(FrameError) as caught:
        decode_tensor_frame(frame, TEST_LIMIT)
    assert caught.value.code == entry["code"], str(caught.value)


def test_encoder_reproduces_the_ok_vectors_byte_for_byte():
    for entry in (e for e in MANIFEST if e["expect"] == "ok"):
        dtype = WIRE_DTYPES[entry["dtype"]]
        array = np.array(entry["values"], dtype=dtype).reshape(entry["shape"])
        assert encode_tensor_frame(array) == (VECTORS / entry["file"]).read_bytes(), entry["file"]


def test_long_header_pads_to_128():
    frame = (VECTORS / "long_header_f64.bin").read_bytes()
    (header_length,) = struct.unpack_from("<Q", frame)
    assert header_length > 56 and data_offset(header_length) == 128


ROUND_TRIP_SHAPES = [(), (0,), (1,), (7,), (3, 5), (0, 4), (2, 3, 4), (1,) * 8]


@pytest.mark.parametrize("name", sorted(WIRE_DTYPES))
@pytest.mark.parametrize("shape", ROUND_TRIP_SHAPES, ids=str)
def test_round_trip(name, shape):
    rng = np.random.default_rng(len(shape) * 31 + len(name))
    dtype = WIRE_DTYPES[name]
    if dtype.kind == "b":
        array = rng.integers(0, 2, size=shape).astype(dtype)
    elif dtype.kind == "i":
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        array = rng.standard_normal(size=shape).astype(dtype)
    frame = encode_tensor_frame(array)
    assert len(frame) % 64 == array.nbytes % 64
    decoded = decode_tensor_frame(frame)
    assert decoded.dtype == dtype and decoded.shape == array.shape
    np.testing.assert_array_equal(decoded, array)


def test_decode_is_zero_copy_and_aligned():
    frame = encode_tensor_frame(np.arange(12, dtype=np.float32).reshape(3, 4))
    array = decode_tensor_frame(frame)
    assert not array.flags.owndata and not array.flags.writeable
    decoded = decode_tensor_frame(bytearray(frame))
    assert decoded.flags.writeable  # a mutable buffer gives a writable view
    offset = data_offset(struct.unpack_from("<Q", frame)[0])
    assert offset % 64 == 0


def test_encoder_normalises_layout_and_byte_order():
    base = np.arange(24, dtype=">f8").reshape(4, 6)
    for array in (base, base.T, base[::2, 1::2], np.asfortranarray(base)):
        decoded = decode_tensor_frame(encode_tensor_frame(array))
        assert decoded.dtype == np.dtype("<f8")
        np.testing.assert_array_equal(decoded, array)


def test_frame_parts_view_the_array_and_make_the_same_frame():
    # The client sends a tensor as two fragments of one message: the header, then the elements
    # straight from the array (a copy of a 64 MiB tensor costs more than its checksum).
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    head, elements = tensor_frame_parts(a)
    assert np.shares_memory(np.frombuffer(elements, dtype=np.float32), a)
    assert head + bytes(elements) == encode_tensor_frame(a)
    assert len(head) % 64 == 0
    # A transposed or big-endian array is made C-order little-endian first, as a whole frame is.
    b = np.arange(6, dtype=">f8").reshape(2, 3).T
    head, elements = tensor_frame_parts(b)
    assert head + bytes(elements) == encode_tensor_frame(np.ascontiguousarray(b, dtype="<f8"))


def test_encoder_refuses_other_dtypes():
    for dtype in (np.float16, np.uint8, np.complex64, np.int16):
        with pytest.raises(FrameError):
            encode_tensor_frame(np.zeros(3, dtype=dtype))


def test_limit_is_checked_before_the_length():
    frame = encode_tensor_frame(np.zeros((4, 4), dtype=np.float64))
    with pytest.raises(FrameError) as caught:
        decode_tensor_frame(frame[:80], max_tensor_bytes=64)
    assert caught.value.code == "limit_exceeded"
    assert decode_tensor_frame(frame, max_tensor_bytes=128).shape == (4, 4)


def _frame(header_text: bytes, data: bytes) -> bytes:
    prefix = struct.pack("<Q", len(header_text)) + header_text
    return prefix + bytes(data_offset(len(header_text)) - len(prefix)) + data


def test_bool_bytes_other_than_zero_and_one_are_refused():
    data = bytes([1, 2])
    header = {"dtype": "bool", "shape": [2], "nbytes": 2, "crc32": zlib.crc32(data)}
    with pytest.raises(FrameError) as caught:
        decode_tensor_frame(_frame(json.dumps(header).encode(), data))
    assert caught.value.code == "invalid_frame"


def test_duplicate_header_keys_are_refused():
    text = b'{"dtype":"f32","dtype":"f32","shape":[],"nbytes":4,"crc32":%d}' % zlib.crc32(bytes(4))
    with pytest.raises(FrameError):
        decode_tensor_frame(_frame(text, bytes(4)))


def test_boolean_json_values_are_not_integers():
    text = b'{"dtype":"f32","shape":[true],"nbytes":4,"crc32":%d}' % zlib.crc32(bytes(4))
    with pytest.raises(FrameError):
        decode_tensor_frame(_frame(text, bytes(4)))
