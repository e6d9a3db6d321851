"""What Client.train returns, and the error a failed round raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np

from . import optim as goblin_optim
from .errors import GoblinError

if TYPE_CHECKING:
    from numpy.typing import NDArray


@dataclass
class RoundRecord:
    """What one round did: its mean loss and the verification of its tasks."""
    round: int
    loss: float
    samples: int
    tasks: int
    verified_tasks: int
    rejected: int        # replicas the node rejected (their tasks were computed again)
    node_audited: int    # tasks the node audited itself (cheap audit or full recomputation)
    node_decided: int    # tasks the node decided or computed itself
    grad_norm: float     # the total 2-norm of the merged gradient, before clipping
    seconds: float
    verification_seconds: float  # the node's comparisons and audits of the round's tasks
    # The round's graph job at the node: part of the training job (fetched, released and
    # cancelled with it; the node refuses those on this id), client.audit(job) reports the round.
    job: str
    # Why the round was trained again after a rewind (a volunteer whose output it used was
    # caught later), or "" for a round trained once.
    redone: str = ""

    @classmethod
    def from_wire(cls, record: Dict[str, Any], samples: int) -> "RoundRecord":
        return cls(round=int(record["round"]), loss=float(record["loss"]), samples=samples,
                   tasks=int(record["tasks"]), verified_tasks=int(record["verified_tasks"]),
                   rejected=int(record["rejected"]), node_audited=int(record["node_audited"]),
                   node_decided=int(record["node_decided"]),
                   grad_norm=float(record["grad_norm"]), seconds=float(record["seconds"]),
                   verification_seconds=float(record.get("verification_seconds", 0.0)),
                   job=str(record["graph_job"]), redone=str(record.get("redone", "")))


@dataclass
class TrainResult:
    """The trained parameters and what each round did. `state_dict` is the model's state dict
    with the trained parameters (torch tensors); `params` the same parameters as numpy arrays;
    pass the result as `resume=` to train on from it. `job` is the node's training job."""
    state_dict: Dict[str, Any]
    history: List[RoundRecord]
    params: Dict[str, NDArray[Any]]
    optimizer: goblin_optim.Optimizer
    rounds: int
    job: str
    flat_params: NDArray[Any] = field(repr=False, default_factory=lambda: np.zeros(0, np.float32))
    optimizer_state: List[NDArray[Any]] = field(repr=False, default_factory=list)

    @property
    def losses(self) -> List[float]:
        return [record.loss for record in self.history]

    def __repr__(self) -> str:
        """Short: the job, the rounds, the last loss and each parameter's shape and dtype, never
        the tensors themselves."""
        params = ", ".join("%s: %s %s" % (name, "x".join(str(d) for d in value.shape) or "scalar",
                                           value.dtype)
                           for name, value in list(self.params.items())[:8])
        more = len(self.params) - 8
        if more > 0:
            params += ", … %d more" % more
        last = "%.6g" % self.history[-1].loss if self.history else "none"
        return "<goblin.TrainResult %s: %d rounds, last loss %s, %s; params {%s}>" % (
            self.job, self.rounds, last, type(self.optimizer).__name__, params)


class TrainingError(GoblinError):
    """A training job failed (a non-finite loss or gradient, bad data the node refused) or its
    connection was lost. `result` holds the rounds committed before the failure (None when the
    node could not be asked); `job` is the training job, to fetch again after a lost connection
    (`Client.fetch_train`)."""

    def __init__(self, message: str, result: Optional[TrainResult], job: Optional[str] = None,
                 code: Optional[str] = None):
        super().__init__(message, code=code)
        self.result = result
        self.job = job
