"""Training survives crashes: the lab node holds a training job's parameters and optimizer state
and commits every round, so a node killed with SIGKILL while a round is in flight (a job resumed
from two committed rounds, its volunteers killed first so that the round waits) resumes the job on
restart — re-attached to the round's graph job, not submitting it again — and a researcher's client
killed with SIGKILL re-attaches with fetch_train; both finish with the same bits as a run that
never stopped."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from goblin import optim

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from conftest import TESTS, die_with_parent  # noqa: E402
from training_models import training_family  # noqa: E402

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

ROUNDS, BATCH, MICRO, SAMPLES, SEED = 4, 8, 4, 24, 11
TIMEOUT = 180.0


def family():
    return training_family("mlp", samples=SAMPLES, seed=SEED)


def train(client, **kwargs):
    model, loss_fn, x, y = family()
    return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=ROUNDS,
                        batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=TIMEOUT,
                        **kwargs)


def fetch(client, job):
    return client.fetch_train(job, family()[0], optimizer=optim.AdamW(lr=1e-2), batch_size=BATCH,
                              timeout=TIMEOUT)


def bits(result):
    return [v.tobytes() for _, v in sorted(result.params.items())], \
        [np.float64(r.loss).tobytes() for r in result.history]


def graph_jobs(cluster):
    return [row[0] for row in cluster.query("SELECT id FROM graph_jobs ORDER BY created_at")]


def two_volunteers(cluster):
    return [cluster.start_volunteer(threads=1, slots=2) for _ in range(2)]


def test_a_node_killed_mid_round_resumes_the_job_to_the_same_bits(cluster):
    token = cluster.add_researcher()
    node = cluster.start_node()
    volunteers = two_volunteers(cluster)
    client = cluster.connect(token, timeout=TIMEOUT)
    uninterrupted = train(client)
    model, loss_fn, x, y = family()
    first = client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=2,
                         batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=TIMEOUT)
    jobs_before = len(graph_jobs(cluster))
    # Nobody computes from here on: the next job's first round stays in flight.
    for volunteer in volunteers:
        volunteer.kill9()
    job = client.submit_train(model, loss_fn, (x, y), rounds=ROUNDS - 2, batch_size=BATCH,
                              micro_batch=MICRO, resume=first)

    def in_flight():
        rows = cluster.query("SELECT rounds_done, round_job FROM train_jobs WHERE id = ?", (job,))
        return rows[0][1] if rows and rows[0][1] else None

    round_job = cluster.wait_until(in_flight, TIMEOUT, "the round's graph job at the node")
    node.kill9()
    assert cluster.query("SELECT rounds_done, round_job FROM train_jobs WHERE id = ?",
                         (job,)) == [(0, round_job)]
    assert graph_jobs(cluster)[-1] == round_job

    cluster.start_node()  # the same database and data folder
    two_volunteers(cluster)
    resumed = fetch(cluster.connect(token, timeout=TIMEOUT), job)
    assert [r.round for r in resumed.history] == [2, 3]
    resumed.history = first.history + resumed.history
    assert bits(resumed) == bits(uninterrupted)
    assert resumed.history[2].job == round_job  # re-attached, not submitted again
    assert len(graph_jobs(cluster)) == jobs_before + ROUNDS - 2


RESEARCHER = textwrap.dedent("""
    import sys
    sys.path.insert(0, %(tests)r)
    import goblin
    from goblin import optim
    from training_models import training_family

    model, loss_fn, x, y = training_family("mlp", samples=%(samples)d, seed=%(seed)d)
    client = goblin.connect(%(url)r, token=%(token)r, timeout=%(timeout)r)
    job = client.submit_train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2),
                              rounds=%(rounds)d, batch_size=%(batch)d, micro_batch=%(micro)d)
    print(job, flush=True)
    sys.stdin.readline()  # killed here, while the node trains
""")


def test_a_client_killed_mid_run_re_attaches_to_the_same_bits(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    two_volunteers(cluster)
    client = cluster.connect(token, timeout=TIMEOUT)
    uninterrupted = train(client)

    script = RESEARCHER % dict(tests=str(TESTS), samples=SAMPLES, seed=SEED, url=cluster.url,
                               token=token, timeout=TIMEOUT, rounds=ROUNDS, batch=BATCH,
                               micro=MICRO)
    researcher = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
    try:
        job = researcher.stdout.readline().strip()
        assert job.startswith("t-"), job
    finally:
        researcher.kill()  # SIGKILL
        researcher.wait(30)
    result = fetch(client, job)
    assert bits(result) == bits(uninterrupted)
    assert [r.round for r in result.history] == list(range(ROUNDS))
    # Released once fetched: the node keeps its data only for the audits of its rounds.
    assert cluster.query("SELECT state FROM train_jobs WHERE id = ?", (job,)) == [("retained",)]
