"""Checkpoint files of a training run (`Client.train(checkpoint=PATH)`): parameters, optimizer
state, history and the pending round in one numpy .npz file, written atomically after every
round and before a round's job is awaited, so that a client killed at any moment resumes
(`resume=PATH`) to the same bits."""

import json
import os
from dataclasses import asdict
from typing import Dict, List

import numpy as np

from . import optim as goblin_optim
from .errors import InputError
from .training_result import RoundRecord, TrainResult

FORMAT = 1


def save_checkpoint(path: str, result: TrainResult) -> None:
    """Writes `result` to `path` atomically (a temporary file renamed over it)."""
    arrays = {"param/" + name: value for name, value in result.params.items()}
    saved = result.optimizer.state_dict()
    for index, state in enumerate(saved["state"]):
        for key, value in state.items():
            arrays["opt/%d/%s" % (index, key)] = value
    meta = {"format": FORMAT, "rounds": result.rounds, "samples_seen": result.samples_seen,
            "pending": list(result.pending) if result.pending else None,
            "optimizer": type(result.optimizer).__name__, "steps": saved["steps"],
            "states": len(saved["state"]), "history": [asdict(r) for r in result.history]}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    temporary = "%s.tmp-%d" % (path, os.getpid())
    with open(temporary, "wb") as out:
        np.savez(out, **arrays)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def load_checkpoint(path: str, optimizer: goblin_optim.Optimizer) -> TrainResult:
    """A TrainResult from save_checkpoint's file; `optimizer` (of the kind that was saved: its
    settings and schedule are code, not data) receives the saved state. `state_dict` is empty:
    train() fills it from the model when it resumes."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            files = {key: stored[key] for key in stored.files}
        meta = json.loads(files.pop("meta").tobytes().decode())
        if meta.get("format") != FORMAT:
            raise ValueError("format %r" % meta.get("format"))
    except (OSError, ValueError, KeyError) as error:
        raise InputError("%s is not a training checkpoint: %s" % (path, error)) from error
    if meta.get("optimizer") != type(optimizer).__name__:
        raise InputError("%s was saved with %s; resume it with the same optimizer, not %s"
                         % (path, meta.get("optimizer"), type(optimizer).__name__))
    states: List[Dict[str, np.ndarray]] = [{} for _ in range(int(meta["states"]))]
    params = {}
    for key, value in files.items():
        kind, _, rest = key.partition("/")
        if kind == "param":
            params[rest] = value
        elif kind == "opt":
            index, _, name = rest.partition("/")
            states[int(index)][name] = value
    optimizer.load_state_dict({"steps": meta["steps"], "state": states})
    pending = (int(meta["pending"][0]), str(meta["pending"][1])) if meta.get("pending") else None
    return TrainResult({}, [RoundRecord(**r) for r in meta["history"]], params, optimizer,
                       int(meta["rounds"]), int(meta["samples_seen"]), pending)
