"""A late catch rewinds a training job (issue 32, item 2): on a node whose lab lowered its checks
(`--audit-floor 0 --probation-audits 0`: agreement alone decides a task), the adversary's patient
pair (tests/adversary, never importing goblin) agrees a poisoned gradient into several rounds, then
grows careless and is caught by a disagreement with an honest volunteer. The audits of the rounds'
graph jobs correct them, the node rewinds the job to the first poisoned round and trains on: the
result equals an honest run's bit for bit, and the rounds trained again say why."""

import numpy as np
import pytest

from goblin import optim

from test_adversaries import JOB_TIMEOUT, banned, honest_id, lied_tasks, wait_for_connected
from test_patient_colluders import PAIR_WAIT, RUNNER

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402

pytestmark = pytest.mark.integration

LOWERED_CHECKS = ["--audit-floor", "0", "--probation-audits", "0",
                  "--shared-address-audit-rate", "0", "--second-opinion-seconds", "2"]


def test_a_pair_caught_late_has_its_rounds_trained_again(cluster):
    if not RUNNER.exists():
        pytest.fail("%s is missing: build the ci preset" % RUNNER)
    token = cluster.add_researcher()
    cluster.start_node(extra_args=LOWERED_CHECKS)
    honest_ids = [honest_id(cluster.start_volunteer(threads=1, slots=1))]
    adversary, ids = cluster.start_adversary(
        "patient-pair", identities=2,
        extra_args=["--addresses", "127.0.0.2,127.0.0.3", "--slots", "4", "--honest-tasks", "2",
                    "--careless-after", "6", "--runner", str(RUNNER), "--pair-wait", PAIR_WAIT])
    wait_for_connected(cluster, 3)
    client = cluster.connect(token, timeout=120)
    model, loss_fn, x, y = training_family("mlp", samples=64, seed=12)
    redone_seen = []

    def train(callback=None):
        return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=10,
                            batch_size=16, micro_batch=4, progress=False, timeout=JOB_TIMEOUT,
                            callback=callback)

    attacked = train(lambda record: redone_seen.append(record.redone))
    assert len(lied_tasks(adversary)) > 6, adversary.tail()
    assert all(banned(adversary, i) for i in ids), adversary.tail()
    # Rounds were trained again, each saying why; the history holds one record per round.
    assert [r.round for r in attacked.history] == list(range(10))
    redone = [r for r in attacked.history if r.redone]
    assert redone and all("was corrected after" in r.redone for r in redone), \
        [r.redone for r in attacked.history]
    assert any(redone_seen), "no train_round record said it was redone"
    rewinds = cluster.query("SELECT first_round, end_round, reason FROM train_rewinds")
    assert rewinds and all(first < end for first, end, _ in rewinds), rewinds
    assert not cluster.query("SELECT * FROM train_snapshots"), "kept states outlived the job"
    # The same job with two honest volunteers: the bits an honest run gives.
    cluster.start_volunteer(threads=1, slots=2)
    control = train()
    assert not any(r.redone for r in control.history)
    for name, value in control.params.items():
        assert np.asarray(attacked.params[name]).tobytes() == np.asarray(value).tobytes(), name
    assert [np.float64(r.loss) for r in attacked.history] == \
        [np.float64(r.loss) for r in control.history]
    assert honest_ids
