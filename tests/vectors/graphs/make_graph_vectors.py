"""Writes the shared graph test vectors: a graph, its inputs and the expected outputs (from the numpy
reference interpreter), or the expected error code. Both tests/compute/test_reference_graphs.cpp and
python/tests/test_graph_reference.py evaluate every file listed in manifest.json.

    .venv/bin/python tests/vectors/graphs/make_graph_vectors.py
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

from goblin import graph, reference  # noqa: E402

RNG = np.random.default_rng(5)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def vector(name, g, inputs, rtol=0.0, atol=0.0):
    entry = {"name": name, "graph": g.to_dict(),
             "inputs": [graph.tensor_to_json(x) for x in inputs]}
    try:
        outputs = reference.run(g, inputs)
        entry["expected"] = [dict(graph.tensor_to_json(y), rtol=rtol, atol=atol) for y in outputs]
    except reference.GraphError as error:
        entry["error"] = error.code
    with open(os.path.join(HERE, name + ".json"), "w") as out:
        json.dump(entry, out, indent=1)
        out.write("\n")
    return name + ".json"


def integer_division():
    g = graph.Graph()
    a = g.input("i32", [2, 4])
    b = g.input("i32", [4])
    g.output(g.floor_divide(a, b), g.remainder(a, b), g.floor_divide(b, a))
    a_val = np.array([[7, -7, 7, -7], [-2147483648, 5, 3, -1]], np.int32)
    b_val = np.array([2, 2, -2, -1], np.int32)
    return vector("integer_division", g, [a_val, b_val])


def integer_division_by_zero():
    g = graph.Graph()
    a = g.input("i64", [3])
    b = g.input("i64", [3])
    g.output(g.remainder(a, b))
    return vector("integer_division_by_zero", g, [np.array([1, 2, 3]), np.array([1, 0, 1])])


def float_edges():
    g = graph.Graph()
    a = g.input("f32", [6])
    b = g.input("f32", [6])
    g.output(g.floor_divide(a, b), g.remainder(a, b), g.maximum(a, b), g.minimum(a, b),
             g.clamp(a, min=-1.0, max=1.0), g.relu(a), g.eq(a, b), g.isnan(a))
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    a_val = np.array([7.5, -7.5, 1.0, nan, inf, -0.0], np.float32)
    b_val = np.array([2.0, 2.0, 0.0, 1.0, 3.0, -2.0], np.float32)
    return vector("float_edges", g, [a_val, b_val])


def mlp():
    g = graph.Graph()
    x = g.input("f32", [4, 8])
    w1 = g.constant(f32(8, 16))
    b1 = g.constant(f32(16))
    w2 = g.constant(f32(16, 3))
    h = g.gelu(g.add(g.matmul(x, w1), b1), approximate="tanh")
    y = g.log_softmax(g.matmul(h, w2), dim=-1)
    g.output(g.softmax(y, dim=1), g.argmax(y, dim=1), y)
    return vector("mlp", g, [f32(4, 8)], rtol=1e-4, atol=1e-5)


def reductions():
    g = graph.Graph()
    x = g.input("f64", [3, 4, 5])
    g.output(g.sum(x, dims=[0, 2]), g.mean(x, dims=[-1], keepdim=True), g.var(x, dims=[1]),
             g.var(x, dims=[1], correction=0), g.amax(x, dims=[2]), g.prod(x, dims=[0]),
             g.cumsum(x, dim=1), g.argmin(x))
    return vector("reductions", g, [RNG.standard_normal((3, 4, 5))], rtol=1e-12, atol=1e-12)


def shapes_and_casts():
    g = graph.Graph()
    x = g.input("f32", [2, 3])
    flags = g.input("bool", [3])
    p = g.permute(x, dims=[1, 0])
    r = g.reshape(p, shape=[-1])
    e = g.expand(g.reshape(x, shape=[2, 1, 3]), shape=[2, 4, -1])
    c = g.cast(g.mul(x, g.constant(np.float32(1e10))), dtype="i32")
    w = g.where(flags, x, g.neg(x))
    g.output(r, e, c, w, g.cast(x, dtype="bool"), g.sum(g.cast(flags, dtype="i32")))
    x_val = np.array([[1.5, -2.5, np.nan], [0.0, 3.25, -1e-3]], np.float32)
    return vector("shapes_and_casts", g, [x_val, np.array([True, False, True])])


def cnn_block():
    g = graph.Graph()
    x = g.input("f32", [2, 3, 9, 8])
    w = g.constant(f32(4, 3, 3, 3))
    bias = g.constant(f32(1, 4, 1, 1))
    conv = g.conv2d(x, w, stride=[1, 1], padding=[1, 1])
    h = g.relu(g.add(conv, bias))
    pool = dict(kernel=[3, 2], stride=[2, 2], padding=[1, 0], ceil_mode=True)
    grouped = g.conv2d(h, g.constant(f32(4, 2, 2, 2)), stride=[2, 1], dilation=[1, 2], groups=2)
    g.output(g.max_pool2d(h, **pool), g.max_pool2d_indices(h, **pool), grouped)
    return vector("cnn_block", g, [f32(2, 3, 9, 8)], rtol=1e-5, atol=1e-5)


def embedding_layer_norm():
    g = graph.Graph()
    tokens = g.input("i64", [2, 5])
    table = g.constant(f32(11, 8))
    x = g.embedding(table, tokens)
    y = g.layer_norm(x, g.constant(f32(8)), g.constant(f32(8)), normalized_ndim=1, eps=1e-5)
    keep = g.dropout_mask(shape=[2, 5, 8], p=0.25, seed=20261129, offset=3)
    z = g.mul(y, keep)
    g.output(z, g.sum(g.one_hot(tokens, num_classes=11), dims=[1]))
    return vector("embedding_layer_norm", g, [np.array([[1, 4, 10, 0, 4], [7, 7, 2, 9, 3]])],
                  rtol=1e-5, atol=1e-5)


def gradients():
    g = graph.Graph()
    x = g.input("f64", [2, 4, 6, 5])
    w = g.constant(RNG.standard_normal((6, 2, 3, 3)))
    conv = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 1], groups=2)
    y = g.conv2d(x, w, **conv)
    dy = g.constant(RNG.standard_normal((2, 6, 3, 5)))
    pool = dict(kernel=[2, 2], stride=[1, 2])
    dp = g.constant(RNG.standard_normal((2, 4, 5, 2)))
    ln_w = g.constant(RNG.standard_normal(5))
    ln = dict(normalized_ndim=1, eps=1e-5)
    g.output(y, g.conv2d_input_grad(dy, w, input_shape=[2, 4, 6, 5], **conv),
             g.conv2d_weight_grad(x, dy, weight_shape=[6, 2, 3, 3], **conv),
             g.max_pool2d_backward(dp, x, **pool),
             g.layer_norm_backward(x, x, ln_w, output="input", **ln),
             g.layer_norm_backward(x, x, ln_w, output="weight", **ln),
             g.layer_norm_backward(x, x, ln_w, output="bias", **ln))
    return vector("gradients", g, [RNG.standard_normal((2, 4, 6, 5))], rtol=1e-10, atol=1e-10)


def indexing_and_layout():
    g = graph.Graph()
    x = g.input("f32", [3, 4])
    idx = g.input("i32", [3, 2])
    ints = g.input("i64", [2, 3])
    rows = g.constant(np.array([2, 0, 2], np.int64))
    g.output(g.gather(x, idx, dim=1), g.index_select(x, rows, dim=0),
             g.index_add(ints, g.constant(np.array([1, 1], np.int64)),
                         g.constant(np.array([[5, 6], [7, 8]], np.int64)), dim=1, alpha=-2),
             g.concat(x, g.slice(x, dim=0, start=-2, end=9223372036854775807), x, dim=0),
             g.slice(x, dim=1, start=1, end=-1, step=2), g.pad(x, pads=[2, -1, -1, 1], value=-0.5),
             g.dropout_mask(shape=[7, 3], p=0.5, seed=-1, dtype="f64"),
             g.dropout_mask(shape=[64], p=0.1, seed=9007199254740993))
    x_val = np.array([[1.5, -2.5, np.nan, 4], [0, np.inf, -1e-3, 8], [9, 10, 11, 12]], np.float32)
    idx_val = np.array([[3, 0], [1, 1], [2, 3]], np.int32)
    return vector("indexing_and_layout", g, [x_val, idx_val, np.array([[1, 2, 3], [4, 5, 6]])])


def index_out_of_range():
    g = graph.Graph()
    classes = g.input("i64", [3])
    g.output(g.one_hot(classes, num_classes=3))
    return vector("index_out_of_range", g, [np.array([0, 3, 1])])


def main():
    names = [integer_division(), integer_division_by_zero(), float_edges(), mlp(), reductions(),
             shapes_and_casts(), cnn_block(), embedding_layer_norm(), gradients(),
             indexing_and_layout(), index_out_of_range()]
    with open(os.path.join(HERE, "manifest.json"), "w") as out:
        json.dump({"vectors": names}, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
