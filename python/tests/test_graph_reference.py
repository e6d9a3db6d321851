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


# ---- catalog 3: the numpy reference of every new op against torch 1.13's own function ----------

def _torch():
    return pytest.importorskip("torch", reason="torch is not installed (optional dependency)")


def _rng(seed=3):
    return np.random.default_rng(seed)


def test_index_ops_match_torch():
    torch = _torch()
    rng = _rng()
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    index = rng.integers(0, 5, (2, 4, 3))
    np.testing.assert_array_equal(reference.run_op("gather", [x, index], {"dim": 2}),
                                  torch.gather(torch.from_numpy(x), 2, torch.from_numpy(index)).numpy())
    np.testing.assert_array_equal(reference.run_op("gather", [x, index[:, :, :1] % 3], {"dim": 0}),
                                  torch.gather(torch.from_numpy(x), 0, torch.from_numpy(index[:, :, :1] % 3)).numpy())
    rows = np.array([3, 0, 3, 1])
    m = rng.integers(-9, 9, (4, 5))
    for dim in (0, 1, -1):
        np.testing.assert_array_equal(reference.run_op("index_select", [m, rows], {"dim": dim}),
                                      torch.index_select(torch.from_numpy(m), dim, torch.from_numpy(rows)).numpy())
    weight = rng.standard_normal((10, 4))
    ids = rng.integers(0, 10, (2, 3)).astype(np.int32)
    np.testing.assert_array_equal(
        reference.run_op("embedding", [weight, ids], {}),
        torch.nn.functional.embedding(torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(weight)).numpy())
    classes = np.array([[0, 3], [1, 1]])
    np.testing.assert_array_equal(reference.run_op("one_hot", [classes], {"num_classes": 4}),
                                  torch.nn.functional.one_hot(torch.from_numpy(classes), 4).numpy())


def test_index_add_matches_torch():
    torch = _torch()
    rng = _rng(4)
    x = rng.standard_normal((4, 6))
    index = np.array([2, 0, 2, 5, 2])
    source = rng.standard_normal((4, 5))
    got = reference.run_op("index_add", [x, index, source], {"dim": 1, "alpha": 0.5})
    want = torch.index_add(torch.from_numpy(x), 1, torch.from_numpy(index), torch.from_numpy(source), alpha=0.5)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-14)
    ints = rng.integers(-5, 5, (3, 2))
    got = reference.run_op("index_add", [ints, np.array([1, 1]), np.ones((2, 2), np.int64)], {"dim": 0, "alpha": 3})
    want = torch.index_add(torch.from_numpy(ints), 0, torch.tensor([1, 1]), torch.ones(2, 2, dtype=torch.int64),
                           alpha=3)
    np.testing.assert_array_equal(got, want.numpy())


def test_index_errors_are_invalid_input():
    x = np.arange(6.0).reshape(2, 3)
    cases = [("gather", [x, np.array([[3]])], {"dim": 1}), ("gather", [x, np.array([[-1]])], {"dim": 1}),
             ("index_select", [x, np.array([2])], {"dim": 0}), ("embedding", [x, np.array([5])], {}),
             ("one_hot", [np.array([4])], {"num_classes": 4}), ("one_hot", [np.array([-1])], {"num_classes": 4}),
             ("index_add", [x, np.array([2]), np.ones((1, 3))], {"dim": 0})]
    for name, args, attrs in cases:
        with pytest.raises(reference.GraphError) as raised:
            reference.run_op(name, args, attrs)
        assert raised.value.code == "invalid_input", name


def test_layer_norm_and_its_gradients_match_torch():
    torch = _torch()
    rng = _rng(5)
    x = (rng.standard_normal((4, 3, 6)) + 50).astype(np.float32)  # a large mean: no cancellation
    w = rng.standard_normal((3, 6)).astype(np.float32)
    b = rng.standard_normal((3, 6)).astype(np.float32)
    got = reference.run_op("layer_norm", [x, w, b], {"normalized_ndim": 2, "eps": 1e-5})
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (3, 6), torch.from_numpy(w), torch.from_numpy(b), 1e-5)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    g = rng.standard_normal(x.shape)
    tx, tw, tb = (torch.from_numpy(a).requires_grad_() for a in (x64, w64, b64))
    y = torch.nn.functional.layer_norm(tx, (6,), tw[0], tb[0], 1e-3)
    y.backward(torch.from_numpy(g))
    np.testing.assert_allclose(reference.run_op("layer_norm", [x64, w64[0], b64[0]], {"normalized_ndim": 1, "eps": 1e-3}),
                               y.detach().numpy(), rtol=1e-12, atol=1e-12)
    for output, expected in [("input", tx.grad), ("weight", tw.grad[0]), ("bias", tb.grad[0])]:
        got = reference.run_op("layer_norm_backward", [g, x64, w64[0]],
                               {"normalized_ndim": 1, "eps": 1e-3, "output": output})
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-9, atol=1e-9, err_msg=output)


def test_layout_ops_match_torch():
    torch = _torch()
    rng = _rng(6)
    a, b = rng.integers(0, 9, (2, 3)), rng.integers(0, 9, (2, 5))
    np.testing.assert_array_equal(reference.run_op("concat", [a, b, a], {"dim": 1}),
                                  torch.cat([torch.from_numpy(v) for v in (a, b, a)], 1).numpy())
    x = rng.standard_normal((7, 4)).astype(np.float32)
    for dim, start, end, step in [(0, -3, 2 ** 63 - 1, 1), (0, 1, 6, 2), (1, -100, -1, 2), (0, 5, 2, 1),
                                  (1, 0, 100, 3), (-1, 3, 4, 1)]:
        got = reference.run_op("slice", [x], {"dim": dim, "start": start, "end": end, "step": step})
        want = torch.ops.aten.slice(torch.from_numpy(x), dim, start, end, step)
        np.testing.assert_array_equal(got, want.numpy())
    for pads, value in [((1, 2), 0.0), ((1, -1, -2, 3), 7.5), ((-4, 0), 0.0), ((0, 0, 0, 0), 1.0)]:
        got = reference.run_op("pad", [x], {"pads": list(pads), "value": value})
        want = torch.nn.functional.pad(torch.from_numpy(x), pads, value=value)
        np.testing.assert_array_equal(got, want.numpy())
    ints = rng.integers(0, 9, (2, 3))
    np.testing.assert_array_equal(reference.run_op("pad", [ints], {"pads": [2, -1], "value": -3}),
                                  torch.nn.functional.pad(torch.from_numpy(ints), (2, -1), value=-3).numpy())


CONV = {"stride": [2, 1], "padding": [1, 2], "dilation": [1, 2], "groups": 2}


def test_conv2d_and_its_gradients_match_torch():
    torch = _torch()
    rng = _rng(7)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 2, 3, 2))
    conv = dict(stride=CONV["stride"], padding=CONV["padding"], dilation=CONV["dilation"], groups=2)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **conv)
    got = reference.run_op("conv2d", [x, w], CONV)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(got.shape)
    want_x = torch.nn.grad.conv2d_input(x.shape, torch.from_numpy(w), torch.from_numpy(g), **conv)
    want_w = torch.nn.grad.conv2d_weight(torch.from_numpy(x), w.shape, torch.from_numpy(g), **conv)
    np.testing.assert_allclose(reference.run_op("conv2d_input_grad", [g, w], dict(CONV, input_shape=list(x.shape))),
                               want_x.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference.run_op("conv2d_weight_grad", [x, g], dict(CONV, weight_shape=list(w.shape))),
                               want_w.numpy(), rtol=1e-12, atol=1e-12)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    np.testing.assert_allclose(reference.run_op("conv2d", [x32, w32], CONV),
                               torch.nn.functional.conv2d(torch.from_numpy(x32), torch.from_numpy(w32), **conv).numpy(),
                               rtol=1e-5, atol=1e-5)


POOLS = [{"kernel": [2, 2]}, {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1]},
         {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 0], "ceil_mode": True},
         {"kernel": [2, 3], "stride": [1, 2], "dilation": [2, 1], "ceil_mode": True}]


def _pool_args(attrs):
    return dict(kernel_size=attrs["kernel"], stride=attrs.get("stride") or attrs["kernel"],
                padding=attrs.get("padding", [0, 0]), dilation=attrs.get("dilation", [1, 1]),
                ceil_mode=attrs.get("ceil_mode", False))


def test_max_pool2d_family_matches_torch():
    torch = _torch()
    rng = _rng(8)
    x = np.round(rng.standard_normal((2, 3, 7, 8)) * 2)  # rounded: ties, where the first max must win
    x[0, 0, 0, :] = -np.inf
    x[1, 2, 3, 3] = np.nan  # one NaN per window: torch and the first-NaN rule agree
    for attrs in POOLS:
        values, indices = torch.nn.functional.max_pool2d(torch.from_numpy(x), return_indices=True, **_pool_args(attrs))
        np.testing.assert_array_equal(reference.run_op("max_pool2d", [x], attrs), values.numpy())
        np.testing.assert_array_equal(reference.run_op("max_pool2d_indices", [x], attrs), indices.numpy())
        g = rng.standard_normal(values.shape)
        want = torch.ops.aten.max_pool2d_with_indices_backward(
            torch.from_numpy(g), torch.from_numpy(x), attrs["kernel"], attrs.get("stride", []),
            attrs.get("padding", [0, 0]), attrs.get("dilation", [1, 1]), attrs.get("ceil_mode", False), indices)
        np.testing.assert_allclose(reference.run_op("max_pool2d_backward", [g, x], attrs), want.numpy(),
                                   rtol=1e-15, atol=1e-15)
        chw = x[0].astype(np.float32)
        np.testing.assert_array_equal(reference.run_op("max_pool2d", [chw], attrs),
                                      torch.nn.functional.max_pool2d(torch.from_numpy(chw), **_pool_args(attrs)).numpy())


def test_max_pool2d_first_nan_wins():
    # docs/ops.md: the first NaN of a window is its argmax (torch 1.13's CPU kernel reports the last).
    x = np.array([[[1.0, np.nan, 3.0, np.nan]]])
    assert reference.run_op("max_pool2d_indices", [x], {"kernel": [1, 4]}).tolist() == [[[1]]]


def test_dropout_mask_is_philox():
    z = np.zeros(1, np.uint32)
    assert [int(v[0]) for v in reference.philox4x32_10((z, z, z, z), (0, 0))] == \
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    pi = [np.array([v], np.uint32) for v in (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344)]
    assert [int(v[0]) for v in reference.philox4x32_10(pi, (0xa4093822, 0x299f31d0))] == \
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    # seed 0, element 0: 0x6627e8d5 / 2^32 = 0.399 → kept for p = 0.39, dropped for p = 0.40.
    assert reference.run_op("dropout_mask", [], {"shape": [1], "p": 0.39, "seed": 0})[0] == np.float32(1 / 0.61)
    assert reference.run_op("dropout_mask", [], {"shape": [1], "p": 0.40, "seed": 0})[0] == 0
    whole = reference.run_op("dropout_mask", [], {"shape": [50, 40], "p": 0.3, "seed": -5})
    shifted = reference.run_op("dropout_mask", [], {"shape": [10], "p": 0.3, "seed": -5, "offset": 7})
    np.testing.assert_array_equal(shifted, whole.reshape(-1)[7:17])
    assert 1300 < np.count_nonzero(whole) < 1500 and set(np.unique(whole)) == {0, np.float32(1 / 0.7)}


def test_builder_variadic_and_zero_arg_ops():
    g = graph.Graph()
    a = g.input("f32", [2, 3])
    mask = g.dropout_mask(shape=[2, 3], p=0.5, seed=1)
    both = g.concat([a, mask], dim=0)
    g.output(g.concat(a, both, a, dim=0))
    wire = json.loads(g.to_json())
    assert wire["nodes"][0] == {"id": 1, "op": "dropout_mask", "args": [],
                                "attrs": {"shape": [2, 3], "p": 0.5, "seed": 1}}
    assert wire["nodes"][2]["args"] == [0, 2, 0]
    [out] = reference.run(g, [np.ones((2, 3), np.float32)])
    assert out.shape == (8, 3)
    with pytest.raises(ValueError):
        g.concat()
    with pytest.raises(ValueError):
        g.concat(*([a] * 9))
    with pytest.raises(ValueError):
        g.dropout_mask(a, shape=[1], p=0.1, seed=1)
