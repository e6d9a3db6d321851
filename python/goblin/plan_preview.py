"""How the node would cut a graph job, before anything of it travels (docs/protocol.md, "Plan
preview"): `Client.plan(...)` sends the job's plan_graph (the submit_graph request without its
tensors) and returns the node's answer as a `Plan`, which prints as a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from .estimate import human_bytes
from .graph_job import graph_request
from .training import round_plan_request

if TYPE_CHECKING:
    import torch
    from numpy.typing import NDArray

    from .connection import Connection
    from .graph_job import BatchSpec, GraphLike


@dataclass(frozen=True)
class PlannedStage:
    """One stage of a plan (stage 0 alone when nothing is cut): its tasks (one per batch range),
    the most one of them holds at once, the most boundary values one reads from earlier stages,
    what they compute in all, and the most matmul tiles one of them computes."""

    tasks: int
    max_bytes: int
    boundary_in_bytes: int
    flops: float
    tiles: int = 0


@dataclass(frozen=True)
class Plan:
    """The node's plan for a graph job submitted now (see docs/protocol.md, "Plan preview")."""

    tasks: int
    ranges: int
    opinions: int
    budget_bytes: int
    volunteers: int
    largest_volunteer_bytes: int
    largest_task_bytes: int
    boundary_bytes: int
    traffic_bytes: int
    flops: float
    stages: List[PlannedStage]
    waits: Optional[str]
    why_whole: Optional[str]
    tiled_matmuls: int = 0  # products too big for a task, cut into tiles, in each batch range

    @property
    def cut_into_stages(self) -> bool:
        return len(self.stages) > 1

    def __str__(self) -> str:
        check = "computed by 2 volunteers each" if self.opinions > 1 else \
            "computed by 1 volunteer each, checked by the node"
        lines = ["plan: %d task(s) = %d batch range(s) x %d stage(s), %s"
                 % (self.tasks, self.ranges, len(self.stages), check)]
        lent = human_bytes(self.largest_volunteer_bytes) if self.largest_volunteer_bytes \
            else "unlimited memory"
        lines.append("volunteers: %d connected, the largest lends %s; a task may hold %s"
                     % (self.volunteers, lent, human_bytes(self.budget_bytes)
                        if self.budget_bytes else "any size"))
        if self.tiled_matmuls:
            lines.append("tiles: %d matmul(s) too big for a task cut into tiles in each batch "
                         "range" % self.tiled_matmuls)
        lines.append("stage  tasks  largest task  boundary in   GFLOP  tiles")
        for index, stage in enumerate(self.stages):
            lines.append("%5d  %5d  %12s  %11s  %6.3g  %5s"
                         % (index, stage.tasks, human_bytes(stage.max_bytes),
                            human_bytes(stage.boundary_in_bytes) if stage.boundary_in_bytes
                            else "-", stage.flops / 1e9, stage.tiles or "-"))
        lines.append("traffic: at most %s to and from volunteers; between stages the node holds "
                     "%s" % (human_bytes(self.traffic_bytes), human_bytes(self.boundary_bytes)))
        if self.why_whole:
            lines.append("not cut: " + self.why_whole)
        if self.waits:
            lines.append("it would wait now: " + self.waits)
        return "\n".join(lines)


def _plan_from(reply: Dict[str, Any]) -> Plan:
    stages = [PlannedStage(int(s["tasks"]), int(s["max_bytes"]), int(s["boundary_in_bytes"]),
                           float(s["flops"]), int(s.get("tiles", 0))) for s in reply["stages"]]
    return Plan(int(reply["tasks"]), int(reply["ranges"]), int(reply["opinions"]),
                int(reply["budget_bytes"]), int(reply["volunteers"]),
                int(reply["largest_volunteer_bytes"]), int(reply["largest_task_bytes"]),
                int(reply["boundary_bytes"]), int(reply["traffic_bytes"]), float(reply["flops"]),
                stages, reply.get("waits"), reply.get("why_whole"),
                int(reply.get("tiled_matmuls", 0)))


def plan_graph(connection: Connection, graph: GraphLike, inputs: Sequence[NDArray[Any]],
               batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
               micro_batch: Optional[int] = None, verification: str = "replicas") -> Plan:
    """The node's plan for the graph job these arguments of Client.run would submit now; the
    same local checks as run, nothing uploaded (the inputs' shapes are all the node gets)."""
    limits = connection.limits
    request, arrays = graph_request(graph, inputs, batch, chunks,
                                    max_tensors=limits["max_tensors_per_message"],
                                    max_tensor_bytes=limits["max_tensor_bytes"],
                                    micro_batch=micro_batch, verification=verification)
    message: Dict[str, Any] = dict(request, type="plan_graph")
    if micro_batch is not None:
        dims = request["batch"]["inputs"]
        marked = next(i for i, dim in enumerate(dims) if dim is not None)
        message["rows"] = int(arrays[marked].shape[int(dims[marked])])
    return request_plan(connection, message)


def plan_training(connection: Connection, model: torch.nn.Module, loss_fn: Callable[..., Any],
                  data: Any, batch_size: int = 32, micro_batch: Optional[int] = None,
                  verification: str = "replicas") -> Plan:
    """The node's plan for one round of the training job these arguments of Client.train would
    submit now (each round is cut alike); nothing uploaded."""
    return request_plan(connection, round_plan_request(connection, model, loss_fn, data,
                                                       batch_size, micro_batch, verification))


def request_plan(connection: Connection, message: Dict[str, Any]) -> Plan:
    """Sends a plan_graph and reads its graph_plan."""
    reply = connection.request(message, [])
    if reply.get("type") != "graph_plan" or not isinstance(reply.get("stages"), list):
        raise connection.violation("plan_graph was answered with %r" % (reply,))
    try:
        return _plan_from(reply)
    except (KeyError, TypeError, ValueError) as error:
        raise connection.violation("a malformed graph_plan: %s" % error) from error


__all__ = ["Plan", "PlannedStage", "plan_graph", "plan_training", "request_plan"]
