"""What every module of the numpy reference interpreter shares: the error it raises and the names
of its types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Array = NDArray[Any]

Attrs = Dict[str, Any]


class GraphError(ValueError):
    """A graph the interpreter refuses; ``code`` is the wire error code ("invalid_input", …)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__("%s: %s" % (code, message))
        self.code = code
