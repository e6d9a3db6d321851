"""Streamed training data (docs/protocol.md, "Streamed training data"): an iterable of batches is
read and sent as the rounds go — never more than BATCHES_AHEAD ahead — and trains to the same bits
as the same data uploaded whole; an iterable that ends early ends the training there; a bad batch
cancels the job and keeps its rounds; the node refuses batches out of order, too far ahead, of
another shape or for another researcher's job, deletes them when the job ends, keeps them across a
kill -9, and a researcher re-attaches with the iterable from its start."""

import json

import numpy as np
import pytest

from goblin import optim, training_stream
from goblin.errors import InputError, LimitExceededError, RemoteError, ShapeError
from goblin.training import TrainingError
from goblin.wire import encode_tensor_frame

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

TIMEOUT = 180.0
BATCH, MICRO = 8, 4


class Batches:
    """Batch i is samples i·B … i·B+B−1; `taken` counts the batches handed out so far."""

    def __init__(self, x, y, count, odd=None):
        self.x, self.y, self.count, self.odd = x, y, count, odd
        self.taken = 0

    def __len__(self):
        return self.count

    def __iter__(self):
        for i in range(self.count):
            self.taken += 1
            rows = slice(i * BATCH, i * BATCH + (5 if i == self.odd else BATCH))
            yield self.x[rows], self.y[rows]


def bits(result):
    return [np.asarray(v).tobytes() for _, v in sorted(result.params.items())], \
        [np.float64(loss).tobytes() for loss in result.losses]


def train(client, data, rounds=None, **kwargs):
    model, loss_fn = kwargs.pop("family")[:2]
    return client.train(model, loss_fn, data, optimizer=optim.AdamW(lr=1e-2), rounds=rounds,
                        batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=TIMEOUT,
                        **kwargs)


def batch_rows(cluster, job):
    return cluster.query("SELECT batch, tensors FROM train_batches WHERE job_id = ? ORDER BY batch",
                         (job,))


@pytest.fixture(scope="module")
def client(shared_cluster):
    return shared_cluster.connect(shared_cluster.token, timeout=TIMEOUT)


def test_streamed_batches_train_to_the_bits_of_the_same_data_whole_and_are_read_as_rounds_go(
        client, shared_cluster):
    family = training_family("mlp", samples=8 * BATCH, seed=5)
    x, y = family[2], family[3]
    whole = train(client, (x, y), rounds=8, family=family)
    batches = Batches(x, y, 8)
    taken_at_round = []
    streamed = train(client, batches, family=family,
                     callback=lambda record: taken_at_round.append((record.round,
                                                                    batches.taken)))
    assert streamed.rounds == 8 and bits(streamed) == bits(whole)
    # Read as the rounds commit: never more than BATCHES_AHEAD batches past the round committed.
    assert [r for r, _ in taken_at_round] == list(range(8))
    for round_, taken in taken_at_round:
        assert taken <= round_ + 1 + training_stream.BATCHES_AHEAD, taken_at_round
    assert taken_at_round[0][1] < 8 and batches.taken == 8
    assert batch_rows(shared_cluster, streamed.job) == []  # each deleted as its round committed


def test_an_iterable_that_ends_early_ends_the_training_there(client, shared_cluster):
    family = training_family("mlp", samples=3 * BATCH, seed=6)
    x, y = family[2], family[3]
    short = train(client, Batches(x, y, 3), rounds=5, family=family)
    assert short.rounds == 3 and [r.round for r in short.history] == [0, 1, 2]
    assert bits(short) == bits(train(client, (x, y), rounds=3, family=family))
    assert batch_rows(shared_cluster, short.job) == []

    def no_len():
        yield x[:BATCH], y[:BATCH]

    with pytest.raises(InputError, match="rounds is needed"):
        train(client, no_len(), family=family)
    with pytest.raises(InputError, match="empty"):
        train(client, iter([]), rounds=2, family=family)


def test_a_bad_batch_mid_stream_cancels_the_job_and_keeps_its_rounds(client, shared_cluster):
    family = training_family("mlp", samples=6 * BATCH, seed=7)
    with pytest.raises(TrainingError, match="batch 2 of the iterable has 5 samples") as caught:
        train(client, Batches(family[2], family[3], 6, odd=2), family=family)
    error = caught.value
    assert error.code == "invalid_input" and error.job.startswith("t-")
    assert "drop_last=True" in str(error)
    assert shared_cluster.query("SELECT state FROM train_jobs WHERE id = ?",
                                (error.job,)) == [("cancelled",)]
    assert batch_rows(shared_cluster, error.job) == []
    with pytest.raises(TrainingError) as fetched:
        client.fetch_train(error.job, family[0], timeout=TIMEOUT)
    assert fetched.value.code == "cancelled" and fetched.value.result is not None


def test_the_node_refuses_bad_batches_and_deletes_held_ones_when_the_job_ends(cluster,
                                                                             monkeypatch):
    token = cluster.add_researcher()
    cluster.start_node()  # no volunteer: no round commits, so the node's window stays put
    client = cluster.connect(token, timeout=TIMEOUT)
    family = training_family("mlp", samples=8 * BATCH, seed=8)
    x, y = family[2].numpy(), family[3].numpy()
    monkeypatch.setattr(training_stream, "BATCHES_AHEAD", 1)  # the client sends nothing ahead
    job = client.submit_train(family[0], family[1], Batches(family[2], family[3], 8),
                              rounds=8, batch_size=BATCH, micro_batch=MICRO)

    def send(batch, xs=None, ys=None, **fields):
        rows = slice(batch * BATCH, (batch + 1) * BATCH)
        frames = [] if fields.get("end") else [
            encode_tensor_frame(x[rows] if xs is None else xs),
            encode_tensor_frame(y[rows] if ys is None else ys)]
        return client.connection.request(dict({"type": "train_batch", "job": str(job),
                                               "batch": batch}, **fields), frames)

    def send_and_id(batch):
        rows = slice(batch * BATCH, (batch + 1) * BATCH)
        request_id = client.connection.send_request(
            {"type": "train_batch", "job": str(job), "batch": batch},
            [encode_tensor_frame(x[rows]), encode_tensor_frame(y[rows])])
        return client.connection.reply(request_id, "train_batch"), request_id

    with pytest.raises(InputError, match="expects batch 1, not batch 2"):
        send(2)
    with pytest.raises(ShapeError, match="x of a batch is f64"):
        send(1, xs=x[:BATCH].astype(np.float64))
    with pytest.raises(ShapeError, match="y of a batch"):
        send(1, ys=y[:BATCH - 1])
    for batch in (1, 2, 3):
        accepted, request_id = send_and_id(batch)
        assert accepted == {"type": "batch_accepted", "id": request_id, "job": job,
                            "batch": batch}
    assert send(2)["type"] == "batch_accepted"  # held already: a resend is ignored
    with pytest.raises(LimitExceededError, match="holds at most 4 batches"):
        send(4)
    with pytest.raises(InputError, match="expects batch 4"):
        send(2, end=True)
    with pytest.raises(RemoteError, match="invalid_message|exactly 2 tensors"):
        client.connection.request({"type": "train_batch", "job": str(job), "batch": 4},
                                  [encode_tensor_frame(x[:BATCH])])
    other = cluster.connect(cluster.add_researcher("bob@example.org"), timeout=TIMEOUT)
    with pytest.raises(RemoteError) as foreign:
        other.connection.request({"type": "train_batch", "job": str(job), "batch": 4},
                                 [encode_tensor_frame(x[:BATCH]), encode_tensor_frame(y[:BATCH])])
    assert foreign.value.code == "not_found"
    whole = client.submit_train(family[0], family[1], (family[2], family[3]), rounds=2,
                                batch_size=BATCH, micro_batch=MICRO)
    with pytest.raises(InputError, match="not submitted with streamed data"):
        client.connection.request({"type": "train_batch", "job": str(whole), "batch": 1},
                                  [encode_tensor_frame(x[:BATCH]), encode_tensor_frame(y[:BATCH])])

    held = batch_rows(cluster, job)
    assert [batch for batch, _ in held] == [1, 2, 3]
    digests = [entry["digest"] for _, tensors in held for entry in json.loads(tensors)]
    assert all((cluster.data_dir / "blobs" / (d + ".bin")).exists() for d in digests)
    client.cancel(job)
    assert batch_rows(cluster, job) == []
    assert not any((cluster.data_dir / "blobs" / (d + ".bin")).exists() for d in digests)
    with pytest.raises(InputError, match="is cancelled; it takes no more data"):
        send(4)


def test_a_killed_node_keeps_the_batches_and_a_new_client_re_attaches_with_the_iterable(cluster):
    token = cluster.add_researcher()
    node = cluster.start_node()  # no volunteer yet: the job holds its first batches and waits
    family = training_family("mlp", samples=6 * BATCH, seed=9)
    x, y = family[2], family[3]
    first = cluster.connect(token, timeout=TIMEOUT)
    job = first.submit_train(family[0], family[1], Batches(x, y, 6), optimizer=optim.AdamW(lr=1e-2),
                             batch_size=BATCH, micro_batch=MICRO)
    assert [b for b, _ in batch_rows(cluster, job)] == [1, 2, 3]
    first.close()
    node.kill9()
    cluster.start_node()  # the same database and data folder
    for _ in range(2):
        cluster.start_volunteer(threads=1, slots=2)
    second = cluster.connect(token, timeout=TIMEOUT)
    batches = Batches(x, y, 6)
    result = second.fetch_train(job, family[0], optimizer=optim.AdamW(lr=1e-2), batch_size=BATCH,
                                timeout=TIMEOUT, data=batches)
    assert [r.round for r in result.history] == list(range(6)) and batches.taken == 6
    assert bits(result) == bits(train(second, (x, y), rounds=6, family=family))
    assert batch_rows(cluster, job) == []
    with pytest.raises(TrainingError) as released:  # fetched, so released: nothing to feed
        cluster.connect(token).fetch_train(job, family[0], data=Batches(x, y, 6))
    assert released.value.code == "not_found"
