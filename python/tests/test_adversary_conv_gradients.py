"""A colluding pair lying on the convolution gradients the node names in `gemm_nodes` to
protocol-9 volunteers under verification="freivalds" (docs/protocol.md, "Graph jobs verified by
Freivalds"): values a volunteer may compute with BLAS in any order, which the node checks by
Freivalds per element instead of comparing bits."""

import numpy as np
import pytest
import torch

from goblin import graph as gg
from test_adversaries import (JOB_TIMEOUT, assert_graph_lies_caught, graph_results, lied_tasks,
                              start_gemm_liars)

CONV = {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
CHUNKS = 12
IMAGES = 2  # a chunk's; the graph is written for them (micro_batch)


def conv_gradient_graph(images, channels=16, size=8, seed=11):
    """dx = ∂conv/∂x (rows along the batch) and dw = ∂conv/∂w (summed over the chunks) of a 3×3
    convolution with 16 channels, written for 2 images: K = 16·9 = 144 for dx, 2·8·8 = 128 for
    dw, both heavy enough for the node to name them in gemm_nodes; inputs of `images` images."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [IMAGES, channels, size, size])
    dy = g.input("f32", [IMAGES, channels, size, size])
    weight = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32)
    w = g.constant(weight)
    g.output(g.op("conv2d_input_grad", dy, w, input_shape=[IMAGES, channels, size, size], **CONV))
    g.output(g.op("conv2d_weight_grad", x, dy, weight_shape=[channels, channels, 3, 3], **CONV))
    inputs = [rng.standard_normal((images, channels, size, size)).astype(np.float32)
              for _ in range(2)]
    return g, inputs, weight


def torch_gradients(inputs, w):
    x, dy = (torch.from_numpy(a.astype(np.float64)) for a in inputs)
    weight = torch.from_numpy(w.astype(np.float64))
    conv = dict(stride=1, padding=1, dilation=1, groups=1)
    return (torch.nn.grad.conv2d_input(x.shape, weight, dy, **conv).numpy(),
            torch.nn.grad.conv2d_weight(x, weight.shape, dy, **conv).numpy())


@pytest.mark.integration
def test_conv_gradient_lies_past_their_bound_are_caught_under_freivalds(cluster):
    """A pair saying protocol 9 shifts one element of a named conv2d_input_grad or
    conv2d_weight_grad by 3× its own bound: the node's convolution check rejects every lie (not a
    frame check, not a recomputation), honest volunteers (real ones, on OpenBLAS) are never
    rejected, and the researcher gets PyTorch's gradients within float32 rounding."""
    client, adversary, ids, honest_ids = start_gemm_liars(cluster, "conv-gradient-past-bound")
    g, inputs, w = conv_gradient_graph(IMAGES * CHUNKS)
    dx, dw = client.run(g, inputs, batch={"inputs": [0, 0], "outputs": [0, "sum"]},
                        micro_batch=IMAGES, verification="freivalds", timeout=JOB_TIMEOUT)
    want_dx, want_dw = torch_gradients(inputs, w)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4 * np.abs(want_dx).max())
    np.testing.assert_allclose(dw, want_dw, rtol=1e-4, atol=1e-4 * np.abs(want_dw).max())
    assert lied_tasks(adversary), "the pair told no lie: were the gradients named to it?"
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)
    accepted = [r for r in graph_results(cluster) if r[3] == "accepted"]
    assert len({r[0] for r in accepted}) == CHUNKS and len(accepted) == CHUNKS
    assert all(r[2] in honest_ids for r in accepted), "a lie was accepted: %s" % accepted
    reasons = [r[0] for r in cluster.query("SELECT reason FROM graph_results WHERE verdict = "
                                           "'rejected' AND method = 'node-audit'")]
    checked = ("(conv2d_input_grad)", "(conv2d_weight_grad)")
    assert reasons and all(any(c in reason for c in checked) for reason in reasons), reasons


# -- the adversary's convolution gradients, without a node ----------------------------------------

@pytest.mark.parametrize("conv", [CONV, {"stride": [2, 1], "padding": [1, 2], "dilation": [1, 2],
                                         "groups": 2}])
def test_adversary_conv_gradients_agree_with_torch(conv):
    """What the adversary computes honestly is PyTorch's gradient (so its lie is the shift it
    means and nothing else), over strides, padding, dilation and groups."""
    from adversary import evaluator
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 4 // conv["groups"], 3, 2))
    flags = dict(stride=conv["stride"], padding=conv["padding"], dilation=conv["dilation"],
                 groups=conv["groups"])
    dy = rng.standard_normal(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                                        **flags).shape)
    want_dx = torch.nn.grad.conv2d_input(x.shape, torch.from_numpy(w), torch.from_numpy(dy),
                                         **flags).numpy()
    want_dw = torch.nn.grad.conv2d_weight(torch.from_numpy(x), w.shape, torch.from_numpy(dy),
                                          **flags).numpy()
    got_dx = evaluator.conv_gradient("conv2d_input_grad", [dy, w],
                                     dict(conv, input_shape=list(x.shape)))
    got_dw = evaluator.conv_gradient("conv2d_weight_grad", [x, dy],
                                     dict(conv, weight_shape=list(w.shape)))
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_dw, want_dw, rtol=1e-12, atol=1e-12)
