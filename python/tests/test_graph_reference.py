"""goblin.graph builder and the numpy reference interpreter, checked on the shared graph vectors
(tests/vectors/graphs, also run by the C++ reference executor) and on hand-computed edge cases."""

import json
import os

import numpy as np
import pytest

from goblin import graph, reference

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "vectors", "graphs")


def _names():
    with open(os.path.join(VECTORS, "manifest.json")) as manifest:
        return json.load(manifest)["vectors"]


@pytest.mark.parametrize("name", _names())
def test_shared_vectors(name):
    with open(os.path.join(VECTORS, name)) as source:
        vector = json.load(source)
    inputs = [graph.tensor_from_json(t) for t in vector["inputs"]]
    if "error" in vector:
        with pytest.raises(reference.GraphError) as raised:
            reference.run(vector["graph"], inputs)
        assert raised.value.code == vector["error"]
        return
    outputs = reference.run(json.dumps(vector["graph"]), inputs)
    for got, want in zip(outputs, vector["expected"]):
        expected = graph.tensor_from_json(want)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=want["rtol"], atol=want["atol"])


def test_builder_wire_form():
    g = graph.Graph()
    x = g.input("f32", [2, 3])
    y = g.sum(g.relu(x), dims=(1,), keepdim=True)
    g.output(y)
    wire = json.loads(g.to_json())
    assert wire["catalog"] == graph.CATALOG_VERSION
    assert wire["nodes"][1] == {"id": 2, "op": "sum", "args": [1], "attrs": {"dims": [1], "keepdim": True}}
    with pytest.raises(ValueError):
        g.op("frobnicate", x)
    with pytest.raises(ValueError):
        g.add(x)


def test_integer_division_sign_rules():
    a = np.array([7, -7, 7, -7, np.iinfo(np.int32).min], np.int32)
    b = np.array([2, 2, -2, -2, -1], np.int32)
    assert reference.run_op("floor_divide", [a, b], {}).tolist() == [3, -4, -4, 3, np.iinfo(np.int32).min]
    assert reference.run_op("remainder", [a, b], {}).tolist() == [1, 1, -1, -1, 0]


def test_missing_value_and_cycle_are_refused():
    spec = {"catalog": graph.CATALOG_VERSION, "inputs": [], "constants": [], "outputs": [1],
            "nodes": [{"id": 1, "op": "neg", "args": [2]}, {"id": 2, "op": "neg", "args": [1]}]}
    with pytest.raises(reference.GraphError, match="cycle"):
        reference.run(spec, [])
    spec["nodes"] = [{"id": 1, "op": "neg", "args": [9]}]
    with pytest.raises(reference.GraphError, match="undefined"):
        reference.run(spec, [])


def test_against_pytorch_when_available():
    torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    t = torch.from_numpy(x)
    for name, attrs, expected in [
            ("gelu", {"approximate": "tanh"}, torch.nn.functional.gelu(t, approximate="tanh")),
            ("log_softmax", {"dim": 1}, torch.log_softmax(t, 1)),
            ("var", {"dims": [0], "correction": 1}, torch.var(t, 0))]:
        np.testing.assert_allclose(reference.run_op(name, [x], attrs), expected.numpy(), rtol=1e-5, atol=1e-6)
