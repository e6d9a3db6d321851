"""Frame assembly (docs/protocol.md, "Messages"): a control message is one JSON text frame that
announces how many tensor frames follow it; outgoing, a message and its tensors become the frames
to send, incoming, frames become (message, tensors) once the last announced tensor arrived.

Pure: no sockets, no clocks. What arrives is hostile until decoded: a bad frame raises
ProtocolError (FrameError for a tensor frame that does not decode).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ..wire import OutgoingFrame, decode_tensor_frame
from .messages import MAX_TENSORS_PER_MESSAGE, violation

if TYPE_CHECKING:
    from numpy.typing import NDArray

# One WebSocket message: a text frame, a binary frame, or a binary frame given in parts (sent as
# fragments of one message, so a tensor is never first joined to its header).
Outgoing = Union[str, bytes, List[Any]]
Message = Tuple[Dict[str, Any], List["NDArray[Any]"]]


def encode_message(message: Dict[str, Any], frames: Sequence[OutgoingFrame]) -> List[Outgoing]:
    """The WebSocket messages that carry `message` and its tensor frames, in order."""
    outgoing: List[Outgoing] = [json.dumps(message, separators=(",", ":"))]
    outgoing += [frame if isinstance(frame, bytes) else list(frame) for frame in frames]
    return outgoing


class MessageAssembler:
    """Turns incoming frames into (message, tensors): a text frame, then the tensor frames it
    announced."""

    def __init__(self, max_tensor_bytes: int) -> None:
        self.max_tensor_bytes = max_tensor_bytes
        self._message: Optional[Dict[str, Any]] = None
        self._due = 0
        self._tensors: List[NDArray[Any]] = []

    @property
    def expecting_tensors(self) -> bool:
        """True between a control message and the last tensor frame it announced."""
        return self._message is not None

    def feed(self, data: Union[str, bytes]) -> Optional[Message]:
        """The complete message `data` ends, or None while announced tensors are still due."""
        if self._message is None:
            return self._control(data)
        if isinstance(data, str):
            raise violation("a text frame arrived while tensors were due")
        self._tensors.append(decode_tensor_frame(data, self.max_tensor_bytes))
        if len(self._tensors) < self._due:
            return None
        complete = (self._message, self._tensors)
        self._message, self._due, self._tensors = None, 0, []
        return complete

    def _control(self, data: Union[str, bytes]) -> Optional[Message]:
        if not isinstance(data, str):
            raise violation("a binary frame arrived that no message announced")
        try:
            message = json.loads(data)
        except ValueError:
            raise violation("a text frame is not JSON: %r" % data[:80]) from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise violation("a control message has no type: %r" % data[:80])
        count = message.get("tensors", 0)
        if not isinstance(count, int) or not 0 <= count <= MAX_TENSORS_PER_MESSAGE:
            raise violation("a message announces %r tensors" % (count,))
        if count == 0:
            return message, []
        self._message, self._due, self._tensors = message, count, []
        return None


__all__ = ["Message", "MessageAssembler", "Outgoing", "encode_message"]
