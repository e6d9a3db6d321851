"""The submit_graph request of a graph job (docs/protocol.md, "Graph jobs"), checked locally.

Large constants leave the JSON and travel as binary tensors (the control frame stays small and
numbers keep their exact bits); the batch split is normalised to one entry per input and output.
"""

from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from .errors import DTypeError, InputError, ShapeError
from .graph import DTYPES, tensor_from_json

# Constants with more elements than this travel as tensors, not as JSON numbers.
INLINE_CONSTANT_ELEMENTS = 256


def graph_dict(graph) -> Dict[str, Any]:
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


def _checked_inputs(declared: List[Dict[str, Any]], inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
    if len(inputs) != len(declared):
        raise InputError("the graph has %d input(s), %d array(s) were given"
                         % (len(declared), len(inputs)))
    arrays = []
    for index, (spec, value) in enumerate(zip(declared, inputs)):
        array = np.asarray(value)
        wanted = np.dtype(DTYPES[spec["dtype"]])
        if array.dtype != wanted:
            raise DTypeError("input %d is %s, the graph declares %s" % (index, array.dtype, wanted))
        if list(array.shape) != list(spec["shape"]):
            raise ShapeError("input %d has shape %s, the graph declares %s"
                             % (index, list(array.shape), list(spec["shape"])))
        arrays.append(np.ascontiguousarray(array))
    return arrays


def _batch(batch, researcher_inputs: int, hoisted: int, outputs: int):
    if batch is None:
        return None
    if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool):
        dims_in: List[Any] = [int(batch)] * researcher_inputs
        dims_out = [int(batch)] * outputs
    elif isinstance(batch, dict):
        dims_in = list(batch.get("inputs", []))
        dims_out = list(batch.get("outputs", []))
        if len(dims_in) != researcher_inputs or len(dims_out) != outputs:
            raise InputError("batch needs one entry per graph input (%d) and output (%d)"
                             % (researcher_inputs, outputs))
    else:
        raise InputError("batch is an int (one dim for every input and output) or a dict "
                         "{'inputs': [...], 'outputs': [...]}")
    return {"inputs": dims_in + [None] * hoisted, "outputs": dims_out}


def graph_request(graph, inputs: Sequence[np.ndarray], batch=None,
                  chunks=None) -> Tuple[Dict[str, Any], List[np.ndarray]]:
    """The submit_graph control message and the arrays that follow it."""
    wire = graph_dict(graph)
    arrays = _checked_inputs(wire.get("inputs", []), inputs)
    researcher_inputs = len(arrays)
    kept, declared = [], list(wire.get("inputs", []))
    for constant in wire.get("constants", []):
        if int(np.prod(constant["shape"], dtype=np.int64)) <= INLINE_CONSTANT_ELEMENTS:
            kept.append(constant)
            continue
        declared.append({"id": constant["id"], "dtype": constant["dtype"],
                         "shape": list(constant["shape"])})
        arrays.append(np.ascontiguousarray(tensor_from_json(constant)))
    wire["inputs"], wire["constants"] = declared, kept
    request: Dict[str, Any] = {"type": "submit_graph", "graph": wire}
    split = _batch(batch, researcher_inputs, len(declared) - researcher_inputs,
                   len(wire.get("outputs", [])))
    if split is not None:
        if chunks is not None:
            split["chunks"] = int(chunks)
        request["batch"] = split
    elif chunks is not None:
        raise InputError("chunks needs a batch split")
    return request, arrays
