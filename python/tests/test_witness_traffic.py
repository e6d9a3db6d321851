"""Witnesses from one replica (docs/protocol.md, protocol 10), end to end: a real lab node and two
real headless volunteers run a replicated graph job whose matmul value (a witness the node's audit
checks, 1 MiB over the job) is far bigger than the researcher's output. One replica of each task
brings the witness and the other leaves it out, so the bytes the node receives are the upload and
one copy of the witnesses — not two — and the result is the reference's, every task audited.
"""

import numpy as np
import pytest

from goblin import graph as gg

from test_graph_network import graph_verdicts
from test_observability import metrics, total

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 120.0
ROWS, INNER, COLUMNS = 256, 128, 1024  # x·w is 1 MiB of f32: the job's one witness (K >= 96)


def wide_product_graph(w):
    g = gg.Graph()
    x = g.input("f32", [ROWS, INNER])
    g.output(g.sum(g.tanh(g.matmul(x, g.constant(w))), dims=[1]))
    return g


def test_one_replica_brings_the_witnesses(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--audit-floor", "1", "--full-audit-share", "0"])
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    client = cluster.connect(token)
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((INNER, COLUMNS)) / np.sqrt(INNER)).astype(np.float32)
    inputs = [rng.standard_normal((ROWS, INNER)).astype(np.float32)]
    g = wide_product_graph(w)
    before = total(metrics(cluster), "goblin_received_bytes_total")
    outputs = client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT)
    received = total(metrics(cluster), "goblin_received_bytes_total") - before
    # Against float64 (a sum of 1,024 tanh values in f32 rounds on the order of 1e-5).
    expected = np.tanh(inputs[0].astype(np.float64) @ w.astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-3)
    # Both tasks decided by two accepted replicas, each audited cheaply on the one witness.
    rows = graph_verdicts(cluster)
    assert len(rows) == 4 and all(v == "accepted" and m == "node-audit" for _, v, m in rows)
    assert all(reason.startswith("cheap audit:") for (reason,) in cluster.query(
        "SELECT reason FROM graph_results"))
    witness_bytes = ROWS * COLUMNS * 4
    upload = inputs[0].nbytes + INNER * COLUMNS * 4  # x, and w sent as an input
    # Before protocol 10 both replicas brought it: upload + 2 × witness_bytes.
    assert received < upload + 1.5 * witness_bytes, (received, upload, witness_bytes)
    assert received > upload + witness_bytes  # one copy did come, for the audits
