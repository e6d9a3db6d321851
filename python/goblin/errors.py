"""Exceptions raised by the goblin client.

Every exception derives from GoblinError. Those about the caller's own arrays also derive from the
matching built-in (ShapeError is a ValueError, DTypeError a TypeError, InputError a ValueError), so
code that already catches the built-ins keeps working. `code` is the wire error code of
docs/protocol.md when there is one ("shape_mismatch", "invalid_frame", ...), else None.
"""

from typing import Dict, Iterable, List, Mapping, Optional, Tuple, Type, Union


class GoblinError(Exception):
    """Base class of every error the goblin package raises."""

    code: Optional[str] = None

    def __init__(self, message: str = "", code: Optional[str] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class AuthenticationError(GoblinError):
    """The node refused the access token (close code 4001)."""

    code = "unauthenticated"


class VersionMismatchError(GoblinError):
    """The node does not speak this client's protocol or catalog version (close code 4002)."""

    code = "version_mismatch"


class ShapeError(GoblinError, ValueError):
    """Matrix shapes that do not fit the operation (checked locally or by the node)."""

    code = "shape_mismatch"


class DTypeError(GoblinError, TypeError):
    """A dtype (or a non-array argument) the operation does not take."""

    code = "unsupported_dtype"


class InputError(GoblinError, ValueError):
    """Values the operation refuses: NaN or Inf in an input, a malformed tile size."""

    code = "invalid_input"


class LimitExceededError(GoblinError, ValueError):
    """A tensor or a job over a limit the node announced (max_tensor_bytes, max_tiles)."""

    code = "limit_exceeded"


class RemoteError(GoblinError):
    """The node answered a request with an error, or a job failed at the node."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__("%s: %s" % (code, message), code=code)
        self.remote_message = message


class ConnectionLostError(GoblinError):
    """The connection closed or could not be opened.

    `close_code` and `reason` hold the WebSocket close frame the node sent, when it sent one;
    `code` is the error code prefix of that reason ("invalid_frame: ..." -> "invalid_frame").
    """

    def __init__(self, message: str, close_code: Optional[int] = None, reason: str = "") -> None:
        code = reason.split(":", 1)[0].strip() if ":" in reason else None
        super().__init__(message, code=code)
        self.close_code = close_code
        self.reason = reason


class CertificateError(ConnectionLostError):
    """The TLS handshake refused the node's certificate: it does not chain to the CA file given
    (ca_file, GOBLIN_CA_FILE) or to the system's trust store, or it does not name the host."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ProtocolError(GoblinError):
    """The node sent something that breaks docs/protocol.md."""

    code = "invalid_message"


class FrameError(ProtocolError):
    """A tensor frame that breaks the frame rules; code is invalid_frame or limit_exceeded."""

    code = "invalid_frame"


class GoblinTimeoutError(GoblinError, TimeoutError):
    """A reply or a job did not arrive within the timeout. The job, if any, keeps running."""

    code = "timeout"


class JobCancelledError(RemoteError):
    """The job was cancelled (by its researcher with cancel(), or by lab staff); code "cancelled".
    Nothing more of it is computed; a cancelled training job still delivers its committed rounds
    (fetch_train raises TrainingError with code "cancelled" and the rounds in its result)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


class JobReleasedError(RemoteError):
    """fetch of a job that was released: its result was delivered (to this client or another
    connection of the same researcher) and its data deleted at the node; code "not_found"."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message)


_REMOTE_CLASSES: Dict[str, Type[GoblinError]] = {
    "shape_mismatch": ShapeError,
    "unsupported_dtype": DTypeError,
    "invalid_input": InputError,
    "limit_exceeded": LimitExceededError,
    "unauthenticated": AuthenticationError,
    "version_mismatch": VersionMismatchError,
}


def remote_error(code: str, message: str) -> GoblinError:
    """The exception for an `error` or `job_failed` message carrying `code`."""
    if code == "cancelled":
        return JobCancelledError(code, message)
    cls = _REMOTE_CLASSES.get(code)
    if cls is None:
        return RemoteError(code, message)
    return cls("%s (node said %s)" % (message, code), code=code)


class TorchRequiredError(GoblinError, ImportError):
    """goblin.capture was called but PyTorch is not installed (torch is an optional dependency)."""


class UnsupportedOperator(GoblinError, ValueError):
    """goblin.capture met aten ops the catalog cannot express.

    `operators` lists every one of them as (name, count) pairs sorted by name, e.g.
    [("aten.sort.default", 1)]; `reasons` maps each name to why it could not be mapped.
    """

    code = "unsupported_operator"

    def __init__(self, operators: Union[Mapping[str, int], Iterable[Tuple[str, int]]],
                 reasons: Optional[Mapping[str, str]] = None) -> None:
        self.operators: List[Tuple[str, int]] = sorted(
            (str(name), int(count)) for name, count in dict(operators).items())
        self.reasons: Dict[str, str] = dict(reasons or {})
        lines = ["%s (x%d): %s" % (name, count, self.reasons.get(name, "no catalog mapping"))
                 for name, count in self.operators]
        super().__init__("the program uses %d aten op%s the catalog cannot express:\n  %s"
                         % (len(lines), "" if len(lines) == 1 else "s", "\n  ".join(lines)))


class CaptureError(GoblinError, RuntimeError):
    """goblin.capture could not trace or map the program for a reason other than an unsupported
    op (PyTorch's tracer refused it, or the program failed on its example inputs); the message
    names the original error, which is also the exception's __cause__."""

    code = "capture_failed"


class CaptureMismatchError(GoblinError, AssertionError):
    """The captured graph, run by goblin.reference, disagrees with PyTorch on the same inputs."""
