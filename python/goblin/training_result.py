"""What Client.train returns, and the error a failed round raises."""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import optim as goblin_optim
from .errors import GoblinError


@dataclass
class RoundRecord:
    """What one round did: its mean loss and the verification of its tasks."""
    round: int
    loss: float
    samples: int
    tasks: int
    verified_tasks: int
    rejected: int        # replicas the node rejected (their tasks were computed again)
    node_audited: int    # tasks the node recomputed itself to audit agreeing replicas
    node_decided: int    # tasks the node decided or computed itself
    grad_norm: float     # the total 2-norm of the merged gradient, before clipping
    seconds: float
    job: str             # the round's graph job at the node


@dataclass
class TrainResult:
    """The trained parameters and what each round did. `state_dict` is the model's state dict
    with the trained parameters (torch tensors); pass the result as `resume=` to continue.
    `pending` is (round, job id) of a round submitted but not applied (the client or the node went
    away while it ran): resuming fetches that job instead of computing the round again."""
    state_dict: Dict[str, Any]
    history: List[RoundRecord]
    params: Dict[str, np.ndarray]
    optimizer: goblin_optim.Optimizer
    rounds: int = 0
    samples_seen: int = 0
    pending: Optional[Tuple[int, str]] = None

    @property
    def losses(self) -> List[float]:
        return [record.loss for record in self.history]


class TrainingError(GoblinError):
    """A round failed (a non-finite loss, a job the node refused, a lost connection); `result`
    holds the rounds that completed, to resume from."""

    def __init__(self, message: str, result: TrainResult):
        super().__init__(message)
        self.result = result
