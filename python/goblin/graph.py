"""Graph builder: op graphs in the catalog's JSON wire form (docs/ops.md, "Wire form").

    from goblin import graph
    g = graph.Graph()
    x = g.input("f32", [4, 8])
    w = g.constant(np.ones((8, 2), np.float32))
    y = g.softmax(g.matmul(x, w), dim=-1)
    g.output(y)
    text = g.to_json()          # what the lab node and volunteers receive
    [out] = goblin.reference.run(g, [x_value])

Every op of the catalog is a method (``g.add(a, b)``, ``g.sum(x, dims=[1], keepdim=True)``);
attributes are keyword arguments. ``concat`` is variadic (``g.concat(a, b, c, dim=1)`` or
``g.concat([a, b], dim=1)``); ``dropout_mask`` takes no values
(``g.dropout_mask(shape=[4, 8], p=0.1, seed=7)``). Shapes and dtypes are checked by the node.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Sequence, Tuple, Type, Union

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

CATALOG_VERSION = 3

# name → (arity, tolerance class); mirrors lib/core/src/ops/op_catalog.cpp, in OpCode order.
# Arity VARIADIC (concat) takes 1 to MAX_VARIADIC_ARGS values; arity 0 (dropout_mask) takes none.
VARIADIC = -1
MAX_VARIADIC_ARGS = 8
OPS: Dict[str, Tuple[int, str]] = {
    "add": (2, "exact"), "sub": (2, "exact"), "mul": (2, "exact"), "div": (2, "exact"),
    "pow": (2, "ulp"), "maximum": (2, "exact"), "minimum": (2, "exact"),
    "floor_divide": (2, "exact"), "remainder": (2, "exact"),
    "eq": (2, "exact"), "ne": (2, "exact"), "lt": (2, "exact"), "le": (2, "exact"),
    "gt": (2, "exact"), "ge": (2, "exact"),
    "logical_and": (2, "exact"), "logical_or": (2, "exact"), "logical_xor": (2, "exact"),
    "logical_not": (1, "exact"), "bitwise_and": (2, "exact"), "bitwise_or": (2, "exact"),
    "bitwise_xor": (2, "exact"), "bitwise_not": (1, "exact"),
    "neg": (1, "exact"), "abs": (1, "exact"), "exp": (1, "ulp"), "log": (1, "ulp"),
    "sqrt": (1, "exact"), "rsqrt": (1, "ulp"), "tanh": (1, "ulp"), "sigmoid": (1, "ulp"),
    "erf": (1, "ulp"), "lgamma": (1, "ulp"), "relu": (1, "exact"), "gelu": (1, "ulp"),
    "isnan": (1, "exact"), "where": (3, "exact"), "clamp": (1, "exact"),
    "sum": (1, "sum"), "mean": (1, "sum"), "amax": (1, "exact"), "amin": (1, "exact"),
    "prod": (1, "sum"), "var": (1, "sum"), "argmax": (1, "exact"), "argmin": (1, "exact"),
    "cumsum": (1, "sum"), "softmax": (1, "ulp"), "log_softmax": (1, "ulp"),
    "cast": (1, "exact"), "reshape": (1, "exact"), "permute": (1, "exact"),
    "expand": (1, "exact"), "matmul": (2, "matmul"),
    # catalog 3
    "gather": (2, "exact"), "index_select": (2, "exact"), "embedding": (2, "exact"),
    "one_hot": (1, "exact"), "index_add": (3, "sum"),
    "layer_norm": (3, "ulp"), "layer_norm_backward": (3, "sum"),
    "concat": (VARIADIC, "exact"), "slice": (1, "exact"), "pad": (1, "exact"),
    "conv2d": (2, "matmul"), "conv2d_input_grad": (2, "matmul"), "conv2d_weight_grad": (2, "matmul"),
    "max_pool2d": (1, "exact"), "max_pool2d_indices": (1, "exact"), "max_pool2d_backward": (2, "sum"),
    "dropout_mask": (0, "exact"),
}

DTYPES: Dict[str, Type[np.generic]] = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
                                       "i64": np.int64, "bool": np.bool_}


def arity_accepts(arity: int, count: int) -> bool:
    """Whether an op of this arity takes `count` inputs."""
    if arity == VARIADIC:
        return 1 <= count <= MAX_VARIADIC_ARGS
    return count == arity


def wire_dtype(dtype: DTypeLike) -> str:
    """The wire name of a numpy dtype ("f32", …)."""
    for name, numpy_type in DTYPES.items():
        if np.dtype(dtype) == np.dtype(numpy_type):
            return name
    raise TypeError("dtype %s is not in the catalog (f32, f64, i32, i64, bool)" % np.dtype(dtype))


def encode_values(array: ArrayLike) -> List[Any]:
    """C-order values as JSON numbers; non-finite floats as "nan", "inf", "-inf"."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype.kind == "f":
        return [("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) if not np.isfinite(v)
                else float(v) for v in flat.tolist()]
    return flat.tolist()


def tensor_to_json(array: ArrayLike) -> Dict[str, Any]:
    array = np.asarray(array)
    return {"dtype": wire_dtype(array.dtype), "shape": list(array.shape),
            "values": encode_values(array)}


def tensor_from_json(obj: Dict[str, Any]) -> NDArray[Any]:
    dtype = DTYPES[obj["dtype"]]
    values = [float(v) if isinstance(v, str) else v for v in obj["values"]]
    return np.array(values, dtype=dtype).reshape(obj["shape"])


class Value:
    """A value of the graph under construction (an input, a constant or a node's result)."""

    def __init__(self, graph: Graph, value_id: int) -> None:
        self.graph = graph
        self.id = value_id

    def __repr__(self) -> str:
        return "Value(%d)" % self.id


class Graph:
    def __init__(self) -> None:
        self._next = 0
        self.inputs: List[Dict[str, Any]] = []
        self.constants: List[Dict[str, Any]] = []
        self.nodes: List[Dict[str, Any]] = []
        self.outputs: List[int] = []

    def _new_id(self) -> int:
        self._next += 1
        return self._next - 1

    def input(self, dtype: str, shape: Sequence[int]) -> Value:
        value = Value(self, self._new_id())
        self.inputs.append({"id": value.id, "dtype": dtype, "shape": [int(d) for d in shape]})
        return value

    def constant(self, array: ArrayLike) -> Value:
        value = Value(self, self._new_id())
        self.constants.append(dict(tensor_to_json(array), id=value.id))
        return value

    def op(self, name: str, *args: Union[Value, Sequence[Value]], **attrs: Any) -> Value:
        if name not in OPS:
            raise ValueError("unknown op %r" % name)
        arity = OPS[name][0]
        if arity == VARIADIC and len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])  # g.concat([a, b], dim=0) as well as g.concat(a, b, dim=0)
        if not arity_accepts(arity, len(args)):
            wanted = "1 to %d" % MAX_VARIADIC_ARGS if arity == VARIADIC else str(arity)
            raise ValueError("%s takes %s inputs, got %d" % (name, wanted, len(args)))
        values: List[Value] = []
        for arg in args:
            if not isinstance(arg, Value) or arg.graph is not self:
                raise ValueError("%s: arguments must be values of this graph" % name)
            values.append(arg)
        value = Value(self, self._new_id())
        clean = {key: (list(v) if isinstance(v, (list, tuple)) else v) for key, v in attrs.items()}
        self.nodes.append({"id": value.id, "op": name, "args": [a.id for a in values],
                           "attrs": clean})
        return value

    def __getattr__(self, name: str) -> Callable[..., Value]:
        if name in OPS:
            return lambda *args, **attrs: self.op(name, *args, **attrs)
        raise AttributeError(name)

    def output(self, *values: Value) -> None:
        self.outputs.extend(v.id for v in values)

    def to_dict(self) -> Dict[str, Any]:
        return {"catalog": CATALOG_VERSION, "inputs": self.inputs, "constants": self.constants,
                "nodes": self.nodes, "outputs": self.outputs}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))
