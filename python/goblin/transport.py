"""The WebSocket transport: the only module that imports websockets (its sync client).

`Transport.open` connects to a node's researcher path (TLS for wss://) and converts every
websockets and TLS failure into a GoblinError once, here at the edge; `send`, `recv` and `close`
move whole WebSocket messages. What the messages mean is goblin.protocol's business.
"""

from __future__ import annotations

import inspect
import ssl
from typing import Any, Dict, Optional, Union

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import connect as ws_connect

from .errors import (CertificateError, ConnectionLostError, GoblinError, GoblinTimeoutError,
                     InputError)
from .protocol.frames import Outgoing
from .protocol.messages import FRAME_OVERHEAD_BYTES, closed_error, researcher_url


class TransportTimeout(GoblinTimeoutError):
    """recv() found nothing within its timeout (the connection is still usable)."""


def tls_context(ca_file: Optional[str]) -> ssl.SSLContext:
    """Verifies the node's certificate and host name: against `ca_file` (PEM) alone when given,
    else against the system's trust store. TLS 1.2 at least."""
    try:
        context = ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise InputError("cannot load the CA file %r: %s" % (ca_file, exc)) from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _closed(exc: ConnectionClosed) -> GoblinError:
    received = getattr(exc, "rcvd", None)
    return closed_error(None if received is None else (received.code, received.reason))


class Transport:
    """One WebSocket connection (websockets' sync client, or anything with its send, recv and
    close). Used from one thread."""

    def __init__(self, websocket: Any) -> None:
        self.websocket = websocket

    @classmethod
    def open(cls, url: str, timeout: float, max_tensor_bytes: int,
             ca_file: Optional[str]) -> Transport:
        """Connects to `url`'s researcher path. Raises InputError (a bad URL or CA file, a
        `ca_file` for ws://), CertificateError or ConnectionLostError."""
        options: Dict[str, Any] = {"compression": None, "open_timeout": timeout,
                                   "close_timeout": min(timeout, 5.0),
                                   "max_size": max_tensor_bytes + FRAME_OVERHEAD_BYTES}
        if url.startswith("wss://"):
            options["ssl"] = tls_context(ca_file)
        elif ca_file is not None:
            raise InputError("ca_file is for wss:// lab nodes, got the URL %r" % (url,))
        accepted = inspect.signature(ws_connect).parameters
        if "proxy" in accepted:
            options["proxy"] = None  # websockets >= 15 would otherwise honour *_PROXY variables
        if "legacy" in accepted:
            options["legacy"] = True  # websockets >= 17: a plain connection, not a context manager
        target = researcher_url(url)
        try:
            return cls(ws_connect(target, **options))
        except ssl.SSLCertVerificationError as exc:  # before ValueError, which it also is
            raise CertificateError("the node's TLS certificate was refused at %s: %s (pass the "
                                   "lab's CA certificate as ca_file or GOBLIN_CA_FILE)"
                                   % (target, exc.verify_message or exc)) from exc
        except ssl.SSLError as exc:
            raise ConnectionLostError("TLS handshake with %s failed: %s (does the node serve TLS "
                                      "on that port?)" % (target, exc)) from exc
        except (InvalidURI, ValueError) as exc:  # ValueError: urllib's, e.g. an unclosed "[::1"
            raise InputError("%r is not a lab node URL: %s" % (url, exc)) from exc
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            # A node that speaks the other transport drops the connection without an answer.
            hint = ""
            if isinstance(exc, (InvalidHandshake, ConnectionResetError)):
                hint = (" (does the node serve TLS on that port?)" if url.startswith("wss://")
                        else " (a node that serves TLS needs a wss:// URL)")
            raise ConnectionLostError("cannot connect to %s: %s%s" % (target, exc, hint)) from exc

    def send(self, data: Outgoing) -> None:
        """Sends one WebSocket message (a list: the parts of one binary message, sent as
        fragments). The node's close becomes the GoblinError its close frame means."""
        try:
            self.websocket.send(data)
        except ConnectionClosed as exc:
            raise _closed(exc) from None

    def recv(self, timeout: Optional[float]) -> Union[str, bytes]:
        """The next WebSocket message; TransportTimeout after `timeout` seconds (None: no
        bound)."""
        try:
            data: Union[str, bytes] = self.websocket.recv(timeout=timeout)
            return data
        except TimeoutError:
            raise TransportTimeout("nothing arrived in time") from None
        except ConnectionClosed as exc:
            raise _closed(exc) from None

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Closes the connection; closing a dead one does not raise."""
        try:
            self.websocket.close(code, reason)
        except Exception:
            pass


__all__ = ["Transport", "TransportTimeout", "tls_context"]
