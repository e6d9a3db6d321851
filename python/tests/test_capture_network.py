"""Captured PyTorch programs (an MLP, a small CNN, a transformer block) run on the network — a real
lab node and two real goblin-volunteer processes, every task computed twice and compared — and
the outputs match PyTorch's own within the capture tolerance.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is the reference of these tests")

import goblin  # noqa: E402
from torch_programs import PROGRAMS  # noqa: E402

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 180.0
BATCH = {"mlp": 24, "cnn": 8, "transformer_block": 6}


@pytest.mark.parametrize("name", sorted(BATCH))
def test_captured_program_on_the_network_matches_pytorch(shared_cluster, name):
    module, make_inputs = PROGRAMS[name](batch=BATCH[name])
    rng = np.random.default_rng(11)
    captured = goblin.capture(module, *make_inputs(rng))
    client = shared_cluster.connect(shared_cluster.token)
    fresh = [t.numpy() for t in make_inputs(rng)]  # not the example the capture was checked on
    outputs = client.run(captured, fresh, batch=0, chunks=3, timeout=JOB_TIMEOUT)
    with torch.no_grad():
        expected = captured.run_torch(*fresh)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape and got.dtype == want.dtype
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)
    summary = client.last_summary
    assert summary["tasks"] == 3
    assert summary["verdicts"]["rejected"] == 0
    assert summary["verdicts"]["accepted"] + summary["backends"].get("node-reference", 0) >= 3
