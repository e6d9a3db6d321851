"""Inputs by digest (docs/protocol.md, protocol 4) on a real lab node and real volunteers: a
training job's parameters reach each volunteer once per round instead of once per task and
replica, and the training is the same, bit for bit, as with volunteers that keep nothing."""

import re

import numpy as np
import pytest

from goblin import optim

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from test_observability import metrics, total  # noqa: E402
from test_graph_network import NO_AUDITS  # noqa: E402

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

ROUNDS, BATCH, MICRO = 3, 16, 4  # 4 tasks a round, each computed by both volunteers
TIMEOUT = 180.0
CONNECTED = re.compile(r"connected to ws://\S+ as (v-\S+)")


def model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 256), torch.nn.GELU(), torch.nn.Linear(256, 4))
    g = torch.Generator().manual_seed(11)
    return model, torch.randn(48, 8, generator=g), torch.randint(0, 4, (48,), generator=g)


def train_with(cluster, client, volunteer_args):
    """Trains on two fresh volunteers started with `volunteer_args`; returns the result and the
    bytes the node sent meanwhile."""
    volunteers = [cluster.start_volunteer(threads=1, slots=2, extra_args=volunteer_args)
                  for _ in range(2)]
    for volunteer in volunteers:
        volunteer.wait_for_line(CONNECTED, 60)
    before = total(metrics(cluster), "goblin_sent_bytes_total")
    model, x, y = model_and_data()
    result = client.train(model, torch.nn.functional.cross_entropy, (x, y),
                          optimizer=optim.AdamW(lr=1e-2), rounds=ROUNDS, batch_size=BATCH,
                          micro_batch=MICRO, progress=False, timeout=TIMEOUT)
    sent = total(metrics(cluster), "goblin_sent_bytes_total") - before
    for volunteer in volunteers:
        volunteer.stop()
    return result, sent


def test_parameters_travel_once_per_volunteer_per_round(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    client = cluster.connect(token)
    kept, kept_bytes = train_with(cluster, client, [])
    whole, whole_bytes = train_with(cluster, client, ["--input-cache-mb", "0"])

    # The same training either way: inputs by digest change what travels, never a value.
    assert [np.float64(loss).tobytes() for loss in kept.losses] == \
        [np.float64(loss).tobytes() for loss in whole.losses]
    for name, value in whole.params.items():
        assert np.asarray(kept.params[name]).tobytes() == np.asarray(value).tobytes(), name
    for record in kept.history + whole.history:
        assert record.tasks == BATCH // MICRO and record.verified_tasks == record.tasks

    # Without keeping, the parameters go with every replica of every task (8 a round: 4 tasks ×
    # 2 volunteers); kept, at most once to each volunteer a round.
    param_bytes = 4 * sum(p.numel() for p in model_and_data()[0].parameters())
    whole_sends = len(replicas(cluster, whole))
    kept_sends = len(set((job, volunteer) for job, volunteer in replicas(cluster, kept)))
    assert whole_sends >= ROUNDS * 6 and kept_sends <= ROUNDS * 2, (whole_sends, kept_sends)
    # Less the control bytes naming costs: a digest per named input, forget_inputs per round.
    naming = 200 * (whole_sends + 2 * ROUNDS)
    assert whole_bytes - kept_bytes >= (whole_sends - kept_sends) * param_bytes - naming, \
        (whole_bytes, kept_bytes, whole_sends, kept_sends, param_bytes)


def replicas(cluster, result):
    """(round job, volunteer) of every replica volunteers computed for the training's rounds."""
    jobs = [record.job for record in result.history]
    return [(job, volunteer) for job in jobs for (volunteer,) in cluster.query(
        "SELECT r.volunteer_id FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id "
        "WHERE t.job_id = ? AND r.volunteer_id != 'node'",
        (job,))]
