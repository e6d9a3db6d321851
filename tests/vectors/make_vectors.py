#!/usr/bin/env python3
"""Writes the tensor frame test vectors of docs/protocol.md into this folder.

The frames are built by hand with struct, json and zlib, independently of the goblin package, so
that the C++ decoder (tests/core/test_tensor_frame.cpp) and the Python decoder
(python/tests/test_wire.py) are both checked against a third implementation. Run it again after
changing a case: `python3 tests/vectors/make_vectors.py`. The output is deterministic.
"""

import json
import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALIGN = 64

# dtype -> (struct code, item size)
ITEMS = {"f32": ("f", 4), "f64": ("d", 8), "i32": ("i", 4), "i64": ("q", 8), "bool": ("B", 1)}


def header_json(fields):
    return json.dumps(fields, separators=(",", ":")).encode("utf-8")


def padded_offset(header_len):
    return (8 + header_len + ALIGN - 1) // ALIGN * ALIGN


def element_bytes(dtype, values):
    code, _ = ITEMS[dtype]
    return struct.pack("<%d%s" % (len(values), code), *values)


def frame(header, data, padding_byte=0):
    """Length field, header bytes, padding (normally zero) up to a multiple of 64, then data."""
    prefix = struct.pack("<Q", len(header)) + header
    pad = padded_offset(len(header)) - len(prefix)
    return prefix + bytes([padding_byte]) * pad + data


def good_frame(dtype, shape, values):
    data = element_bytes(dtype, values)
    header = header_json(
        {"dtype": dtype, "shape": shape, "nbytes": len(data), "crc32": zlib.crc32(data)})
    return frame(header, data)


def count(shape):
    n = 1
    for dim in shape:
        n *= dim
    return n


def ok_cases():
    """(file, dtype, shape, C-order values); every value is exactly representable."""
    cases = [
        ("f32_2x3.bin", "f32", [2, 3], [1.5, -2.25, 0.0, 3.0, 4.5, -0.125]),
        ("f64_1x1.bin", "f64", [1, 1], [-7.75]),
        ("f64_vec4.bin", "f64", [4], [0.5, 1024.0, -3.0, 0.0009765625]),
        ("i32_2x2.bin", "i32", [2, 2], [1, -2, 2147483647, -2147483648]),
        ("i64_3.bin", "i64", [3], [-1, -1099511627779, 42]),
        ("bool_5.bin", "bool", [5], [1, 0, 0, 1, 1]),
        ("scalar_f32.bin", "f32", [], [3.5]),
        ("empty_0x3_f32.bin", "f32", [0, 3], []),
        # Rank 6 makes the header longer than 56 bytes: the padding spans to offset 128.
        ("long_header_f64.bin", "f64", [1, 1, 1, 2, 1, 2], [1.0, -2.0, 0.25, 8.0]),
        ("rank8_i32.bin", "i32", [1] * 7 + [2], [7, -7]),
    ]
    for name, dtype, shape, values in cases:
        assert count(shape) == len(values), name
    return cases


def exact_fit_case():
    """An i32 vector whose header is exactly 56 bytes, so 8 + 56 = 64 and there is no padding."""
    for n in range(1, 200):
        values = list(range(n))
        data = element_bytes("i32", values)
        header = header_json(
            {"dtype": "i32", "shape": [n], "nbytes": len(data), "crc32": zlib.crc32(data)})
        if len(header) == 56:
            return ("header_56_no_padding.bin", "i32", [n], values)
    raise AssertionError("no shape gives a 56-byte header")


def error_cases():
    """(file, code, frame bytes)."""
    f32 = element_bytes("f32", [1.5, -2.25, 0.0, 3.0, 4.5, -0.125])
    crc = zlib.crc32(f32)

    def f32_header(**changes):
        fields = {"dtype": "f32", "shape": [2, 3], "nbytes": 24, "crc32": crc}
        fields.update(changes)
        return header_json(fields)

    good = frame(f32_header(), f32)
    huge = 1 << 20
    limit_header = header_json(
        {"dtype": "f32", "shape": [huge, huge], "nbytes": huge * huge * 4, "crc32": 0})
    deep = b"[" * 2000 + b"]" * 2000
    return [
        ("truncated.bin", "invalid_frame", good[:-5]),
        ("too_short.bin", "invalid_frame", good[:5]),
        ("truncated_header.bin", "invalid_frame", good[:8 + 10]),
        ("garbage.bin", "invalid_frame", bytes(range(0xA0, 0xFF)) * 3),
        ("header_len_zero.bin", "invalid_frame", struct.pack("<Q", 0) + bytes(56) + f32),
        ("header_len_4097.bin", "invalid_frame",
         struct.pack("<Q", 4097) + b" " * 4097 + bytes(padded_offset(4097) - 8 - 4097) + f32),
        ("header_not_json.bin", "invalid_frame", frame(b"dtype=f32 shape=2x3", f32)),
        ("header_not_object.bin", "invalid_frame", frame(b"[\"f32\",[2,3],24]", f32)),
        ("header_too_deep.bin", "invalid_frame", frame(deep, f32)),
        ("header_not_utf8.bin", "invalid_frame", frame(f32_header(dtype="f\udcff2")
                                                        .replace(b"\\udcff", b"\xff"), f32)),
        ("unknown_dtype.bin", "invalid_frame", frame(f32_header(dtype="f16"), f32)),
        ("dtype_not_string.bin", "invalid_frame", frame(f32_header(dtype=32), f32)),
        ("bad_nbytes.bin", "invalid_frame", frame(f32_header(nbytes=20), f32[:20])),
        ("trailing_byte.bin", "invalid_frame", good + b"\x00"),
        ("bad_crc.bin", "invalid_frame", frame(f32_header(crc32=(crc + 1) & 0xFFFFFFFF), f32)),
        ("crc_over_32_bits.bin", "invalid_frame", frame(f32_header(crc32=crc + (1 << 32)), f32)),
        ("nonzero_padding.bin", "invalid_frame", frame(f32_header(), f32, padding_byte=0x20)),
        ("extra_key.bin", "invalid_frame",
         frame(header_json({"dtype": "f32", "shape": [2, 3], "nbytes": 24, "crc32": crc,
                            "order": "C"}), f32)),
        ("missing_crc.bin", "invalid_frame",
         frame(header_json({"dtype": "f32", "shape": [2, 3], "nbytes": 24}), f32)),
        ("negative_dim.bin", "invalid_frame", frame(f32_header(shape=[-2, -3]), f32)),
        ("float_dim.bin", "invalid_frame", frame(f32_header(shape=[2.0, 3]), f32)),
        ("rank_9.bin", "invalid_frame", frame(f32_header(shape=[1] * 7 + [2, 3]), f32)),
        ("bool_value_2.bin", "invalid_frame",
         frame(header_json({"dtype": "bool", "shape": [3], "nbytes": 3,
                            "crc32": zlib.crc32(bytes([1, 2, 0]))}), bytes([1, 2, 0]))),
        # nbytes agrees with the shape, but the tensor is over the 1 GiB test limit: the decoder
        # must say limit_exceeded before it notices that the elements are missing.
        ("limit_exceeded.bin", "limit_exceeded", frame(limit_header, b"")),
    ]


def main():
    for old in HERE.glob("*.bin"):
        old.unlink()
    vectors = []
    for name, dtype, shape, values in ok_cases() + [exact_fit_case()]:
        (HERE / name).write_bytes(good_frame(dtype, shape, values))
        vectors.append({"file": name, "expect": "ok", "dtype": dtype, "shape": shape,
                        "values": values})
    for name, code, data in error_cases():
        (HERE / name).write_bytes(data)
        vectors.append({"file": name, "expect": "error", "code": code})
    manifest = json.dumps({"vectors": vectors}, indent=1) + "\n"
    (HERE / "manifest.json").write_text(manifest, encoding="utf-8")
    print("wrote %d vectors to %s" % (len(vectors), HERE))


if __name__ == "__main__":
    main()
