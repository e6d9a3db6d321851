"""A job's size, stated before anything is uploaded (docs/protocol.md, "Quotas"): the bytes it
uploads, its tiles or tasks when the client can tell, and its FLOPs when the client can count them
(a matmul: 2·m·k·n). `check_quota` sends the size to the node, which refuses a job over the
researcher's quota before the upload starts (goblin.lifecycle.check_quota).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

def human_bytes(count: int) -> str:
    value, unit = float(count), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024:
            break
        value, unit = value / 1024, name
    return "%d bytes" % count if unit == "bytes" else "%.1f %s" % (value, unit)


@dataclass(frozen=True)
class Estimate:
    """What a job will take, as the client knows before uploading it.

    `kind` is "matmul", "graph" or "train"; `bytes` what it uploads; `tasks` its tiles (matmul),
    tasks (graph) or micro-batch tasks over all rounds (training), None when the node plans them;
    `unit` names them; `flops` the floating-point operations (None: only the node can count them
    once it has the graph)."""

    kind: str
    bytes: int
    tasks: Optional[int]
    unit: str
    flops: Optional[float]

    def describe(self) -> str:
        parts = ["uploads " + human_bytes(self.bytes)]
        parts.append("%s %s" % ("{:,}".format(self.tasks), self.unit) if self.tasks is not None
                     else "%s planned by the node" % self.unit)
        parts.append("%.3g FLOPs" % self.flops if self.flops is not None
                     else "FLOPs counted by the node")
        return "%s job: %s" % (self.kind, ", ".join(parts))


__all__ = ["Estimate", "human_bytes"]
