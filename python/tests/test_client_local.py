"""Argument checks of matmul: all refused locally, before a single byte goes to the node."""

import numpy as np
import pytest

import goblin
from goblin.client import Client
from goblin.transport import Transport
from goblin.errors import (DTypeError, GoblinError, InputError, LimitExceededError, ShapeError)
from goblin.validation import check_tile, validate_matmul_inputs


class RecordingConnection:
    """Stands in for the WebSocket: any traffic at all fails the test."""

    def __init__(self):
        self.sent = []

    def send(self, data):
        self.sent.append(data)
        raise AssertionError("matmul sent data although its arguments are invalid")

    def recv(self, timeout=None):
        raise AssertionError("matmul waited for the node although its arguments are invalid")

    def close(self, *args):
        pass


def rand(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture
def offline_client():
    connection = RecordingConnection()
    client = Client(Transport(connection), timeout=1.0, max_tensor_bytes=1 << 30)
    yield client
    assert connection.sent == []


BAD_INPUTS = [
    # (A, B, exception, words the message must contain)
    (rand((3, 4)), rand((5, 2)), ShapeError, ["(3, 4)", "(5, 2)"]),
    (rand((3, 4)), rand((4, 2), np.float64), DTypeError, ["float32", "float64"]),
    (rand((3, 4)).astype(np.int64), rand((4, 2)).astype(np.int64), DTypeError, ["int64"]),
    (rand((3, 4)).astype(np.float16), rand((4, 2)).astype(np.float16), DTypeError, ["float16"]),
    (rand((3, 4)).astype(np.complex64), rand((4, 2)), DTypeError, ["complex64"]),
    (rand((0, 4)), rand((4, 2)), ShapeError, ["empty matrices are refused"]),
    (rand((3, 0)), rand((0, 2)), ShapeError, ["empty matrices are refused"]),
    (rand((3, 4)), rand((4, 0)), ShapeError, ["empty matrices are refused"]),
    (rand((12,)), rand((12, 2)), ShapeError, ["2-D"]),
    (rand((2, 3, 4)), rand((4, 2)), ShapeError, ["2-D"]),
    ([[1.0, 2.0]], rand((2, 2)), DTypeError, ["numpy.ndarray", "list"]),
    (rand((2, 2)), 3.0, DTypeError, ["numpy.ndarray", "float"]),
]


@pytest.mark.parametrize("A, B, error, words", BAD_INPUTS)
def test_bad_inputs_are_refused_with_a_clear_message(A, B, error, words):
    with pytest.raises(error) as caught:
        validate_matmul_inputs(A, B)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize("A, B, error, words", BAD_INPUTS)
def test_matmul_refuses_before_any_traffic(offline_client, A, B, error, words):
    with pytest.raises(error):
        offline_client.matmul(A, B)
    with pytest.raises(error):
        offline_client.submit_matmul(A, B)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("which", ["A", "B"])
def test_non_finite_values_are_refused(offline_client, value, which):
    A, B = rand((5, 6)), rand((6, 3), seed=1)
    (A if which == "A" else B)[2, 1] = value
    with pytest.raises(InputError) as caught:
        offline_client.matmul(A, B)
    assert which in str(caught.value) and "(2, 1)" in str(caught.value)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, GoblinError)


def test_error_classes_also_derive_from_builtins():
    assert issubclass(ShapeError, ValueError) and issubclass(ShapeError, GoblinError)
    assert issubclass(DTypeError, TypeError) and issubclass(DTypeError, GoblinError)
    for name in ("AuthenticationError", "VersionMismatchError", "RemoteError",
                 "ConnectionLostError", "ProtocolError", "FrameError"):
        assert issubclass(getattr(goblin, name), GoblinError)


@pytest.mark.parametrize("tile", [[0, 4], [4], "ab", [2.5, 3], [True, 2], [-1, 3], 7])
def test_bad_tiles_are_refused(offline_client, tile):
    with pytest.raises(InputError):
        check_tile(tile)
    with pytest.raises(InputError):
        offline_client.matmul(rand((4, 4)), rand((4, 4)), tile=tile)


def test_good_tiles_pass():
    assert check_tile(None) is None
    assert check_tile([7, 5]) == (7, 5)
    assert check_tile((np.int64(3), 1)) == (3, 1)


def test_over_the_node_limits_is_refused(offline_client):
    # (A matrix over the tensor limit is no longer refused: it goes in row blocks,
    # test_matmul_rows.py.) Too many tiles and a whole C over this client's limit are.
    connection = RecordingConnection()
    small = Client(Transport(connection), timeout=1.0, max_tensor_bytes=100)
    with pytest.raises(LimitExceededError, match="this client's max_tensor_bytes"):
        small.matmul(rand((6, 6)), rand((6, 6)))
    assert connection.sent == []
    offline_client.limits["max_tiles"] = 3
    with pytest.raises(LimitExceededError):
        offline_client.matmul(rand((5, 5)), rand((5, 5)), tile=[2, 2])


def test_non_contiguous_inputs_are_made_contiguous():
    base = rand((8, 10), np.float64)
    for A in (base.T, base[::2, ::3], np.asfortranarray(base)):
        B = rand((A.shape[1], 3), np.float64, seed=2)
        A2, B2 = validate_matmul_inputs(A, B)
        assert A2.flags.c_contiguous and B2.flags.c_contiguous
        np.testing.assert_array_equal(A2, A)


def test_byte_swapped_float_inputs_are_accepted():
    A = rand((3, 4)).astype(">f4")
    B = rand((4, 2)).astype("<f4")
    A2, _ = validate_matmul_inputs(A, B)
    np.testing.assert_array_equal(A2, A)


def test_the_data_warning_is_in_the_docstring():
    doc = " ".join(goblin.Client.matmul.__doc__.split())
    assert "not encrypted" in doc and "medical" in doc
