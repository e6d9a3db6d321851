"""The client's CRC-32 equals zlib's on every path (libdeflate for large buffers, zlib for small)."""

import zlib

import numpy as np
import pytest

from goblin import FrameError, checksum
from goblin.wire import decode_tensor_frame, encode_tensor_frame


def test_libdeflate_is_used_where_the_project_installed_it():
    # scripts/install_deps.sh installs libdeflate-dev (and so libdeflate0) on every machine we test.
    assert checksum.uses_libdeflate()


def test_equals_zlib_at_every_size_and_offset():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, size=(3 << 20) + 77, dtype=np.uint8).tobytes()
    for size in (0, 1, 63, 4096, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 1 << 20, len(data) - 5):
        for offset in (0, 1, 5):
            piece = memoryview(data)[offset:offset + size]
            assert checksum.crc32(piece) == zlib.crc32(piece), (size, offset)
    assert checksum.crc32(data) == zlib.crc32(data)
    assert checksum.crc32(b"123456789") == 0xCBF43926  # the CRC-32 check value


def test_reads_a_numpy_array_and_a_read_only_buffer_in_place():
    array = np.arange(1 << 18, dtype=np.float32).reshape(512, 512)
    assert checksum.crc32(array) == zlib.crc32(array.tobytes())
    read_only = np.frombuffer(array.tobytes(), dtype=np.float32)
    assert not read_only.flags.writeable
    assert checksum.crc32(read_only) == zlib.crc32(array.tobytes())


def test_a_large_frame_round_trips_and_a_flipped_bit_is_caught():
    array = np.random.default_rng(4).standard_normal((1024, 1024)).astype(np.float32)
    frame = bytearray(encode_tensor_frame(array))
    assert np.array_equal(decode_tensor_frame(bytes(frame)), array)
    frame[-1] ^= 0x10
    with pytest.raises(FrameError, match="checksum mismatch"):
        decode_tensor_frame(bytes(frame))
