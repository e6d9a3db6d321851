"""What audits after delivery found about a job (docs/protocol.md, "Audits of delivered jobs").

A volunteer caught lying later may have agreed with a second identity on tasks of a job that was
already delivered. The lab node then recomputes those tasks and, where they were wrong, replaces
them: `Client.audit(job_id)` returns the report, with the job's corrected outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from .errors import ProtocolError

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: clean: never audited; the others, most urgent first, are the states of an audit.
AUDIT_STATES = ("clean", "rechecking", "unverifiable", "corrected", "stands")
_ENTRY_FIELDS: Dict[str, Union[type, Tuple[type, ...]]] = {
    "volunteer": str, "reason": str, "state": str, "tasks": int, "corrected": int,
    "at": (int, float)}


@dataclass
class AuditReport:
    """One job's audits.

    state: "clean" (never audited), "rechecking" (the node is recomputing tasks), "unverifiable"
    (the job's data was already deleted: some outputs may be wrong and cannot be recomputed),
    "corrected" (the node replaced wrong outputs: `outputs` holds all the job's outputs as they
    are now) or "stands" (the node's recomputation agrees with what was delivered).
    audits: one dict per audit — volunteer, reason, state, tasks, corrected, at (epoch seconds).
    """
    job: str
    state: str
    audits: List[Dict[str, Any]] = field(default_factory=list)
    outputs: Optional[List[NDArray[Any]]] = None

    @property
    def needs_attention(self) -> bool:
        """True when what the researcher got may have been wrong (corrected or unverifiable)."""
        return self.state in ("corrected", "unverifiable")


def parse_audit_report(message: Dict[str, Any], tensors: List[NDArray[Any]]) -> AuditReport:
    """Checks an audit_report message; raises ProtocolError when it is malformed."""
    job, state, audits = message.get("job"), message.get("state"), message.get("audits")
    if not isinstance(job, str) or state not in AUDIT_STATES or not isinstance(audits, list):
        raise ProtocolError("a malformed audit_report: %r" % (message,))
    for entry in audits:
        if not isinstance(entry, dict) or any(
                not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool)
                for key, kind in _ENTRY_FIELDS.items()):
            raise ProtocolError("a malformed audit in audit_report: %r" % (entry,))
    return AuditReport(job, state, list(audits), list(tensors) if tensors else None)
