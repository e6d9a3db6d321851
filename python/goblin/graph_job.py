"""The submit_graph request of a graph job (docs/protocol.md, "Graph jobs"), checked locally.

Large constants leave the JSON and travel as binary tensors (the control frame stays small and
numbers keep their exact bits); when there are more of them than a message may carry, those of one
dtype travel packed in flat tensors that the graph slices and reshapes back. The batch split is
normalised to one entry per input and output.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import lifecycle
from .errors import DTypeError, InputError, LimitExceededError, ShapeError
from .estimate import Estimate
from .graph import DTYPES, tensor_from_json
from .validation import check_finite
from .wire import tensor_frame_parts

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .capture import CapturedGraph
    from .connection import Connection
    from .graph import Graph

    #: What Client.run and submit_graph take as a graph.
    GraphLike = Union[Graph, CapturedGraph, Dict[str, Any]]
    #: An int (one dim for every input and output) or {"inputs": [...], "outputs": [...]}.
    BatchSpec = Union[int, Dict[str, Any]]

# Constants with more elements than this travel as tensors, not as JSON numbers.
INLINE_CONSTANT_ELEMENTS = 256


def graph_dict(graph: GraphLike) -> Dict[str, Any]:
    """The wire-form dict of a goblin.graph.Graph, a goblin.capture() result or a dict."""
    if isinstance(graph, dict):
        return dict(graph)
    inner = getattr(graph, "graph", None)
    if inner is not None and hasattr(inner, "to_dict"):
        return inner.to_dict()
    if hasattr(graph, "to_dict"):
        return graph.to_dict()
    raise TypeError("run() takes a goblin.graph.Graph, a captured graph or a graph dict, not %s"
                    % type(graph).__name__)


def _checked_inputs(declared: List[Dict[str, Any]], inputs: Sequence[NDArray[Any]],
                    rows: Dict[int, Tuple[int, int]]) -> List[NDArray[Any]]:
    """Each input with exactly its declared dtype and shape; `rows` maps an input of a
    micro-batched job to (its batch dim, the micro-batch), where it may carry any positive multiple
    of the declared rows."""
    if len(inputs) != len(declared):
        raise InputError("the graph has %d input(s), %d array(s) were given"
                         % (len(declared), len(inputs)))
    arrays = []
    for index, (spec, value) in enumerate(zip(declared, inputs)):
        array = np.asarray(value)
        wanted = np.dtype(DTYPES[spec["dtype"]])
        if array.dtype != wanted:
            raise DTypeError("input %d is %s, the graph declares %s" % (index, array.dtype, wanted))
        shape = list(spec["shape"])
        if index in rows and array.ndim == len(shape):
            dim, micro = rows[index]
            if shape[dim] != micro:
                raise ShapeError("input %d declares %d rows along its batch dim, the micro-batch "
                                 "is %d" % (index, shape[dim], micro))
            if array.shape[dim] == 0 or array.shape[dim] % micro:
                raise ShapeError("input %d carries %d rows, not a positive multiple of the "
                                 "micro-batch %d" % (index, array.shape[dim], micro))
            shape[dim] = array.shape[dim]
        if list(array.shape) != shape:
            raise ShapeError("input %d has shape %s, the graph declares %s"
                             % (index, list(array.shape), shape))
        arrays.append(np.ascontiguousarray(array))
    return arrays


MERGES = ("sum", "mean")


def _batch(batch: Optional[BatchSpec], researcher_inputs: int, hoisted: int,
           outputs: int) -> Optional[Dict[str, Any]]:
    if batch is None:
        return None
    if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool):
        dims_in: List[Any] = [int(batch)] * researcher_inputs
        dims_out: List[Any] = [int(batch)] * outputs
    elif isinstance(batch, dict):
        dims_in = list(batch.get("inputs", []))
        dims_out = list(batch.get("outputs", []))
        if len(dims_in) != researcher_inputs or len(dims_out) != outputs:
            raise InputError("batch needs one entry per graph input (%d) and output (%d)"
                             % (researcher_inputs, outputs))
    else:
        raise InputError("batch is an int (one dim for every input and output) or a dict "
                         "{'inputs': [...], 'outputs': [...]}")
    for entry in dims_out:
        if isinstance(entry, str) and entry not in MERGES:
            raise InputError("batch outputs are dims, 'sum' or 'mean', not %r" % entry)
    return {"inputs": dims_in + [None] * hoisted, "outputs": dims_out}


def _micro_rows(batch: Optional[BatchSpec], declared: List[Dict[str, Any]],
                micro_batch: Optional[int]) -> Dict[int, Tuple[int, int]]:
    """The marked inputs of a micro-batched job: index → (batch dim, micro-batch)."""
    if micro_batch is None:
        return {}
    if not isinstance(batch, dict) and not isinstance(batch, (int, np.integer)):
        raise InputError("micro_batch needs a batch split")
    if isinstance(micro_batch, bool) or not isinstance(micro_batch, (int, np.integer)) \
            or micro_batch < 1:
        raise InputError("micro_batch must be a positive integer")
    dims = [batch] * len(declared) if not isinstance(batch, dict) else list(batch.get("inputs", []))
    rows = {}
    for index, dim in enumerate(dims[:len(declared)]):
        if dim is not None:
            rank = len(declared[index]["shape"])
            rows[index] = (int(dim) % rank if rank else 0, int(micro_batch))
    return rows


def _value_ids(wire: Dict[str, Any]) -> List[int]:
    return [int(v["id"]) for key in ("inputs", "constants", "nodes") for v in wire.get(key, [])]


def _packed(wire: Dict[str, Any], declared: List[Dict[str, Any]], arrays: List[NDArray[Any]],
            researcher_inputs: int,
            max_bytes: int) -> Tuple[List[Dict[str, Any]], List[NDArray[Any]]]:
    """The hoisted constants packed per dtype into flat tensors of at most max_bytes; each constant
    becomes a slice and a reshape of its pack, ahead of the graph's nodes."""
    next_id = max(_value_ids(wire) + [int(d["id"]) for d in declared]) + 1
    groups: List[List[int]] = []
    for index in range(researcher_inputs, len(arrays)):
        group = next((g for g in groups if arrays[g[0]].dtype == arrays[index].dtype and
                      sum(arrays[i].nbytes for i in g) + arrays[index].nbytes <= max_bytes), None)
        if group is None:
            groups.append([index])
        else:
            group.append(index)
    packed_declared, packed_arrays = declared[:researcher_inputs], arrays[:researcher_inputs]
    unpacking: List[Dict[str, Any]] = []
    for group in groups:
        pack_id, next_id = next_id, next_id + 1
        pack = np.concatenate([arrays[i].ravel() for i in group])
        packed_declared.append({"id": pack_id, "dtype": declared[group[0]]["dtype"],
                                "shape": [int(pack.size)]})
        packed_arrays.append(pack)
        offset = 0
        for i in group:
            piece, next_id = next_id, next_id + 1
            size = int(arrays[i].size)
            unpacking.append({"id": piece, "op": "slice", "args": [pack_id],
                              "attrs": {"dim": 0, "start": offset, "end": offset + size,
                                        "step": 1}})
            unpacking.append({"id": declared[i]["id"], "op": "reshape", "args": [piece],
                              "attrs": {"shape": list(declared[i]["shape"])}})
            offset += size
    wire["nodes"] = unpacking + list(wire.get("nodes", []))
    return packed_declared, packed_arrays


# How a graph job's tasks are verified (docs/verification.md): "replicas" — two volunteers whose
# canonical kernels agree bit for bit, plus the node's audits; "freivalds" — one volunteer, its
# large matmuls through BLAS, every task checked by the node (matmuls by Freivalds per element,
# everything else recomputed bit for bit).
VERIFICATIONS = ("replicas", "freivalds")


def graph_request(graph: GraphLike, inputs: Sequence[NDArray[Any]],
                  batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
                  max_tensors: int = 64, max_tensor_bytes: int = 1 << 30,
                  micro_batch: Optional[int] = None,
                  verification: str = "replicas") -> Tuple[Dict[str, Any], List[NDArray[Any]]]:
    """The submit_graph control message and the arrays that follow it (at most `max_tensors` of
    them when the hoisted constants can be packed within `max_tensor_bytes` each)."""
    if verification not in VERIFICATIONS:
        raise InputError("verification is one of %s, not %r"
                         % (", ".join(repr(v) for v in VERIFICATIONS), verification))
    wire = graph_dict(graph)
    rows = _micro_rows(batch, wire.get("inputs", []), micro_batch)
    arrays = _checked_inputs(wire.get("inputs", []), inputs, rows)
    researcher_inputs = len(arrays)
    kept, declared = [], list(wire.get("inputs", []))
    for constant in wire.get("constants", []):
        if int(np.prod(constant["shape"], dtype=np.int64)) <= INLINE_CONSTANT_ELEMENTS:
            kept.append(constant)
            continue
        declared.append({"id": constant["id"], "dtype": constant["dtype"],
                         "shape": list(constant["shape"])})
        arrays.append(np.ascontiguousarray(tensor_from_json(constant)))
    wire["constants"] = kept
    if len(arrays) > max_tensors:
        declared, arrays = _packed(wire, declared, arrays, researcher_inputs, max_tensor_bytes)
    wire["inputs"] = declared
    request: Dict[str, Any] = {"type": "submit_graph", "graph": wire}
    if verification != "replicas":
        request["verification"] = verification
    split = _batch(batch, researcher_inputs, len(declared) - researcher_inputs,
                   len(wire.get("outputs", [])))
    if split is not None:
        if chunks is not None:
            split["chunks"] = int(chunks)
        if micro_batch is not None:
            split["micro_batch"] = int(micro_batch)
        request["batch"] = split
    elif chunks is not None:
        raise InputError("chunks needs a batch split")
    return request, arrays


def check_inputs_finite(arrays: Sequence[NDArray[Any]], operation: str) -> None:
    """InputError for NaN or Inf in any floating-point input (validation.nonfinite_error)."""
    for index, array in enumerate(arrays):
        check_finite("input %d" % index, array, operation)


def graph_tasks(request: Dict[str, Any], arrays: Sequence[NDArray[Any]]) -> Optional[int]:
    """The tasks of a graph request when the client can tell (chunks asked for, or the rows of a
    micro-batched job); None when the node picks them (one per connected volunteer)."""
    split = request.get("batch")
    if split is None:
        return 1
    if split.get("chunks") is not None:
        return int(split["chunks"])
    micro = split.get("micro_batch")
    for index, dim in enumerate(split.get("inputs", [])):
        if micro is not None and dim is not None and index < len(arrays):
            return int(arrays[index].shape[int(dim)]) // int(micro)
    return None


def submit_graph(connection: Connection, graph: GraphLike, inputs: Sequence[NDArray[Any]],
                 batch: Optional[BatchSpec] = None, chunks: Optional[int] = None,
                 micro_batch: Optional[int] = None, verification: str = "replicas",
                 progress: bool = False, allow_nonfinite: bool = False) -> str:
    """Submits a graph job (see Client.run) within the node's limits; returns its id. Inputs
    holding NaN or Inf are refused unless `allow_nonfinite`; the job's size is checked against
    the quota (and stated, with `progress`) before anything is uploaded."""
    limits = connection.limits
    request, arrays = graph_request(graph, inputs, batch, chunks,
                                    max_tensors=limits["max_tensors_per_message"],
                                    max_tensor_bytes=limits["max_tensor_bytes"],
                                    micro_batch=micro_batch, verification=verification)
    if not allow_nonfinite:
        check_inputs_finite(arrays[:len(inputs)], "run")
    for index, array in enumerate(arrays):
        if array.nbytes > limits["max_tensor_bytes"]:
            raise LimitExceededError("input %d takes %d bytes, over the node's tensor limit of "
                                     "%d" % (index, array.nbytes, limits["max_tensor_bytes"]))
    if len(arrays) > limits["max_tensors_per_message"]:
        raise LimitExceededError("the graph has %d inputs (large constants count as inputs), "
                                 "over the node's limit of %d"
                                 % (len(arrays), limits["max_tensors_per_message"]))
    size = len(json.dumps(request, separators=(",", ":")))
    if size > limits["max_authenticated_control_bytes"]:
        raise LimitExceededError("the graph's JSON takes %d bytes, over the node's limit of %d"
                                 % (size, limits["max_authenticated_control_bytes"]))
    lifecycle.check_quota(connection, Estimate("graph", sum(int(a.nbytes) for a in arrays),
                                               graph_tasks(request, arrays), "tasks", None),
                          progress)
    reply = connection.submit_request(request, [tensor_frame_parts(a) for a in arrays])
    job = reply.get("job")
    if reply.get("type") != "job_accepted" or not isinstance(job, str):
        raise connection.violation("submit_graph was answered with %s"
                                   % json.dumps(reply)[:200])
    connection.last_job = job
    state = connection.session.job(job)
    if isinstance(reply.get("tasks"), int) and state.progress is None:
        state.progress = (0, reply["tasks"])
    return job
