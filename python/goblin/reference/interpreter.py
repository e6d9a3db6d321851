"""The numpy reference interpreter's entry points: run_op dispatches one catalog op to its family
module, run evaluates a whole graph in dependency order."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Union

import numpy as np

from ..graph import CATALOG_VERSION, DTYPES, OPS, Graph, arity_accepts, tensor_from_json
from . import conv, elementwise, indexing, philox, reductions
from .common import Attrs, GraphError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .common import Array


def _catalog3(name: str, args: List[Array], attrs: Attrs) -> Array:
    if name == "gather":
        return indexing.gather(args[0], args[1], attrs)
    if name == "index_select":
        return indexing.index_select(args[0], args[1], attrs)
    if name == "embedding":
        return indexing.embedding(args[0], args[1])
    if name == "one_hot":
        return indexing.one_hot(args[0], attrs)
    if name == "index_add":
        return indexing.index_add(args[0], args[1], args[2], attrs)
    if name == "layer_norm":
        return reductions.layer_norm(args[0], args[1], args[2], attrs)
    if name == "layer_norm_backward":
        return reductions.layer_norm_backward(args[0], args[1], args[2], attrs)
    if name == "concat":
        return indexing.concat(args, attrs)
    if name == "slice":
        return indexing.slice_along(args[0], attrs)
    if name == "pad":
        return indexing.pad(args[0], attrs)
    if name == "conv2d":
        return conv.conv2d(args[0], args[1], attrs)
    if name == "conv2d_input_grad":
        return conv.conv2d_input_grad(args[0], args[1], attrs)
    if name == "conv2d_weight_grad":
        return conv.conv2d_weight_grad(args[0], args[1], attrs)
    if name == "dropout_mask":
        return philox.dropout_mask_from_attrs(attrs)
    return conv.max_pool2d(name, args, attrs)


CATALOG3 = ("gather", "index_select", "embedding", "one_hot", "index_add", "layer_norm",
            "layer_norm_backward", "concat", "slice", "pad", "conv2d", "conv2d_input_grad",
            "conv2d_weight_grad", "max_pool2d", "max_pool2d_indices", "max_pool2d_backward",
            "dropout_mask")


def run_op(name: str, args: Sequence[Array], attrs: Attrs) -> Array:
    """One catalog op on numpy arrays."""
    if name not in OPS:
        raise GraphError("invalid_input", "unknown op %r" % name)
    if not arity_accepts(OPS[name][0], len(args)):
        raise GraphError("invalid_input", "%s cannot take %d inputs" % (name, len(args)))
    if name in CATALOG3:
        return _catalog3(name, [np.asarray(a) for a in args], attrs)
    if name == "where":
        if_true, if_false = np.broadcast_arrays(args[1], args[2])
        return np.where(args[0], if_true, if_false).astype(args[1].dtype)
    if name == "clamp":
        return elementwise.clamp(args[0], attrs)
    if name in ("sum", "mean", "amax", "amin", "prod", "var"):
        return np.asarray(reductions.reduce(name, args[0], attrs))
    if name in ("argmax", "argmin", "cumsum", "softmax", "log_softmax"):
        return reductions.along(name, args[0], attrs)
    if name == "cast":
        return elementwise.cast(args[0], attrs["dtype"])
    if name == "reshape":
        return args[0].reshape(attrs["shape"])
    if name == "permute":
        return np.ascontiguousarray(np.transpose(args[0], attrs["dims"]))
    if name == "expand":
        shape = [d if d != -1 else args[0].shape[i - (len(attrs["shape"]) - args[0].ndim)]
                 for i, d in enumerate(attrs["shape"])]
        return np.ascontiguousarray(np.broadcast_to(args[0], shape))
    if name == "matmul":
        return np.matmul(args[0], args[1])
    if len(args) == 2:
        return elementwise.binary(name, args[0], args[1])
    return elementwise.unary(name, args[0], attrs)


def _as_dict(graph: Union[Graph, str, bytes, Dict[str, Any]]) -> Dict[str, Any]:
    if isinstance(graph, Graph):
        return graph.to_dict()
    if isinstance(graph, (str, bytes)):
        return json.loads(graph)
    return graph


def run(graph: Union[Graph, str, bytes, Dict[str, Any]],
        inputs: Sequence[ArrayLike]) -> List[Array]:
    """Runs a graph on numpy inputs (in graph input order); returns the outputs as a list."""
    spec = _as_dict(graph)
    if spec.get("catalog") != CATALOG_VERSION:
        raise GraphError("version_mismatch", "graph uses catalog %r" % spec.get("catalog"))
    if len(inputs) != len(spec["inputs"]):
        raise GraphError("invalid_input", "graph takes %d inputs" % len(spec["inputs"]))
    values = {}
    for declared, array in zip(spec["inputs"], inputs):
        values[declared["id"]] = np.asarray(array, dtype=DTYPES[declared["dtype"]]) \
            .reshape(declared["shape"])
    for constant in spec.get("constants", []):
        values[constant["id"]] = tensor_from_json(constant)
    pending = list(spec.get("nodes", []))
    while pending:
        ready = [n for n in pending if all(a in values for a in n["args"])]
        if not ready:
            known = {n["id"] for n in pending}
            missing = [a for n in pending for a in n["args"] if a not in values and a not in known]
            raise GraphError("invalid_input", "node reads undefined value %d" % missing[0]
                             if missing else "graph has a cycle")
        for node in ready:
            args = [values[a] for a in node["args"]]
            values[node["id"]] = np.asarray(run_op(node["op"], args, node.get("attrs", {})))
        pending = [n for n in pending if n["id"] not in values]
    return [values[i] for i in spec["outputs"]]
