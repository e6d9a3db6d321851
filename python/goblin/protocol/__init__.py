"""The researcher protocol without I/O: message forms and versions (messages), frame assembly
(frames) and the session that matches replies to requests and keeps a state per job (session).
Bytes and messages in, events and frames out: no sockets, no clocks (goblin.transport does the
I/O, goblin.connection the waiting)."""

from .frames import Message, MessageAssembler, Outgoing, encode_message
from .messages import (CATALOG_VERSION, DEFAULT_LIMITS, FRAME_OVERHEAD_BYTES,
                       MAX_TENSORS_PER_MESSAGE, PROTOCOL_VERSION, RESEARCHER_PATH)
from .session import Event, JobState, ResearcherSession

__all__ = ["CATALOG_VERSION", "DEFAULT_LIMITS", "Event", "FRAME_OVERHEAD_BYTES", "JobState",
           "MAX_TENSORS_PER_MESSAGE", "Message", "MessageAssembler", "Outgoing",
           "PROTOCOL_VERSION", "RESEARCHER_PATH", "ResearcherSession", "encode_message"]
