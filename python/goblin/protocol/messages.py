"""The researcher protocol's constants and message forms (docs/protocol.md, /v1/researcher).

Pure: no sockets, no clocks. The versions, the limits a client assumes until the node's welcome
says otherwise, the hello and its welcome, and the close codes both ends give.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Tuple

from ..errors import (AuthenticationError, ConnectionLostError, GoblinError, ProtocolError,
                      VersionMismatchError)
from ..graph import CATALOG_VERSION
from ..wire import DEFAULT_MAX_TENSOR_BYTES

PROTOCOL_VERSION = 8  # 2 added audit and audit_report, 3 submit_train and train_round, 4 cancel
# and list_jobs, 5 train_batch and batch_accepted (streamed training data), 6 result_tile (a
# product's accepted tiles pushed while its job runs), 7 check_quota and quota, 8 plan_graph and
# graph_plan (how a graph job would be cut). Version 9 changed volunteers' task frames alone
# (gemm_nodes may name convolution gradients): a researcher speaks 8, which the node still admits.
RESEARCHER_PATH = "/v1/researcher"
# Room for the frame header and padding on top of the largest tensor.
FRAME_OVERHEAD_BYTES = 64 * 1024
MAX_TENSORS_PER_MESSAGE = 64

DEFAULT_LIMITS = {"max_control_bytes": 65536, "max_tensor_bytes": DEFAULT_MAX_TENSOR_BYTES,
                  "max_tiles": 1000000, "max_authenticated_control_bytes": 4 << 20,
                  "max_tensors_per_message": MAX_TENSORS_PER_MESSAGE}

# Close codes the node gives (docs/protocol.md): a refused token, a version it does not speak.
CLOSE_UNAUTHENTICATED = 4001
CLOSE_VERSION_MISMATCH = 4002


def researcher_url(url: str) -> str:
    """The node URL with the researcher path appended (once)."""
    url = url.rstrip("/")
    return url if url.endswith(RESEARCHER_PATH) else url + RESEARCHER_PATH


def violation(text: str) -> ProtocolError:
    """The error for a node that broke the protocol."""
    return ProtocolError("the node broke the protocol: " + text)


def hello(request_id: int, token: Optional[str]) -> Dict[str, Any]:
    message: Dict[str, Any] = {"type": "hello", "id": request_id, "protocol": PROTOCOL_VERSION,
                               "catalog": CATALOG_VERSION}
    if token is not None:
        message["token"] = token.strip()
    return message


def check_welcome(request_id: int, welcome: Dict[str, Any]) -> Dict[str, int]:
    """The limits a welcome announces; VersionMismatchError or ProtocolError when it is not the
    welcome to hello `request_id` in this client's versions."""
    if welcome.get("type") != "welcome" or welcome.get("id") != request_id:
        raise violation("expected welcome, got %s" % brief(welcome))
    if welcome.get("protocol") != PROTOCOL_VERSION or welcome.get("catalog") != CATALOG_VERSION:
        raise VersionMismatchError("the node speaks protocol %r / catalog %r, this client %d / %d"
                                   % (welcome.get("protocol"), welcome.get("catalog"),
                                      PROTOCOL_VERSION, CATALOG_VERSION))
    limits = welcome.get("limits")
    if not isinstance(limits, dict):
        return {}
    return {key: value for key, value in limits.items()
            if isinstance(value, int) and not isinstance(value, bool)}


def closed_error(close: Optional[Tuple[int, str]]) -> GoblinError:
    """The exception for a closed connection, from the close frame the node sent (if any)."""
    if close is None:
        return ConnectionLostError("the connection to the node was lost without a close frame")
    code, reason = close
    if code == CLOSE_UNAUTHENTICATED:
        return AuthenticationError("the node refused the access token (%s)" % reason)
    if code == CLOSE_VERSION_MISMATCH:
        return VersionMismatchError("the node does not speak protocol %d / catalog %d (%s)"
                                    % (PROTOCOL_VERSION, CATALOG_VERSION, reason))
    return ConnectionLostError("the node closed the connection with code %d: %s" % (code, reason),
                               close_code=code, reason=reason)


def close_frame(error: GoblinError) -> Tuple[int, str]:
    """The close code and reason this client sends after `error` (docs/protocol.md's close-reason
    form for a protocol error: a limit → 1009, anything else → 1002; otherwise 1000)."""
    if not isinstance(error, ProtocolError):
        return 1000, ""
    code = 1009 if error.code == "limit_exceeded" else 1002
    reason = ("%s: %s" % (error.code, error)).encode("utf-8")[:123].decode("utf-8", "ignore")
    return code, reason


def brief(message: Dict[str, Any]) -> str:
    """A message, cut short, for an error text."""
    return json.dumps(message)[:200]


__all__ = ["CATALOG_VERSION", "DEFAULT_LIMITS", "FRAME_OVERHEAD_BYTES", "MAX_TENSORS_PER_MESSAGE",
           "PROTOCOL_VERSION", "RESEARCHER_PATH", "brief", "check_welcome", "close_frame", "closed_error",
           "hello", "researcher_url", "violation"]
