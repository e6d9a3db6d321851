"""GPU Goblin researcher client: matrix products computed by volunteers, verified by a lab node.

    import goblin
    with goblin.connect("ws://lab.example.org:8765", token=TOKEN) as client:
        C = client.matmul(A, B, progress=True)

Numbers are not encrypted while volunteers compute them: personal or medical data does not belong
on the public network.
"""

from .audit import AuditReport
from .capture import CapturedGraph, capture
from .client import CATALOG_VERSION, DATA_WARNING, PROTOCOL_VERSION, Client, connect
from .errors import (AuthenticationError, CaptureError, CaptureMismatchError, CertificateError,
                     ConnectionLostError,
                     DTypeError, FrameError, GoblinError, GoblinTimeoutError, InputError,
                     JobCancelledError, JobReleasedError,
                     LimitExceededError, ProtocolError, RemoteError, ShapeError,
                     TorchRequiredError, UnsupportedOperator, VersionMismatchError)
from .estimate import Estimate
from .jobs import Job, JobInfo
from . import optim
from .plan_preview import Plan, PlannedStage
from .training_result import RoundRecord, TrainingError, TrainResult
from .validation import validate_matmul_inputs
from .wire import decode_tensor_frame, encode_tensor_frame

__version__ = "0.1.0"

__all__ = [
    "AuditReport", "AuthenticationError", "CATALOG_VERSION", "CaptureError",
    "CaptureMismatchError", "CapturedGraph", "CertificateError", "Client",
    "ConnectionLostError", "DATA_WARNING", "DTypeError", "Estimate", "FrameError", "GoblinError",
    "GoblinTimeoutError", "InputError", "Job", "JobCancelledError", "JobInfo", "JobReleasedError",
    "LimitExceededError", "PROTOCOL_VERSION", "Plan", "PlannedStage", "ProtocolError",
    "RemoteError", "RoundRecord", "ShapeError", "TrainResult", "TrainingError", "TorchRequiredError", "UnsupportedOperator",
    "VersionMismatchError", "capture", "connect", "decode_tensor_frame", "encode_tensor_frame",
    "optim", "validate_matmul_inputs",
]
