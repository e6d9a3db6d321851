"""Client.train on a real lab node and real volunteers: an MLP, a CNN and a character-level
transformer LM trained by the node in rounds of verified micro-batch tasks give PyTorch's own
training (same initial weights, data order and optimizer); runs repeat bit for bit, a resumed run
continues to the same bits, a lying volunteer is caught, and bad input fails clearly."""

import copy
import re

import numpy as np
import pytest

from goblin import optim
from goblin.errors import InputError, UnsupportedOperator
from goblin.training import TrainingError

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402
from test_graph_network import NO_AUDITS, graph_verdicts, quarantined, wait_for_volunteers  # noqa: E402,E501

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

ROUND_TIMEOUT = 180.0
BATCH, MICRO = 8, 4

# family → (goblin optimizer, the same in torch, clip_grad_norm)
SETUPS = {
    "mlp": (lambda: optim.AdamW(lr=1e-2, weight_decay=0.05),
            lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.05), 1.0),
    "cnn": (lambda: optim.SGD(lr=0.05, momentum=0.9, nesterov=True),
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True), None),
    "lm": (lambda: optim.Adam(lr=lambda step: 3e-3 * 0.8 ** step, betas=(0.9, 0.95)),
           lambda ps: torch.optim.Adam(ps, lr=3e-3, betas=(0.9, 0.95)), 0.5),
}


def torch_training(model, loss_fn, x, y, rounds, make_optimizer, clip, schedule=None):
    """PyTorch's own loop over the same batches: samples (r·B + i) mod N of round r."""
    model = copy.deepcopy(model)
    opt = make_optimizer(model.parameters())
    lr_schedule = schedule(opt) if schedule else None
    losses = []
    for r in range(rounds):
        rows = torch.arange(r * BATCH, (r + 1) * BATCH) % x.shape[0]
        opt.zero_grad()
        loss = loss_fn(model(x[rows]), y[rows])
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if lr_schedule is not None:
            lr_schedule.step()
        losses.append(loss.item())
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


def flat(state, names):
    return np.concatenate([np.asarray(state[n], dtype=np.float64).ravel() for n in names])


def assert_same_training(result, want_losses, want_state, start_state, names):
    got = result.losses
    assert len(got) == len(want_losses)
    np.testing.assert_allclose(got, want_losses, rtol=1e-5)
    moved = np.linalg.norm(flat(want_state, names) - flat(start_state, names))
    off = np.linalg.norm(flat(result.state_dict, names) - flat(want_state, names))
    assert moved > 0 and off <= 1e-2 * moved, (off, moved)


def bits(result):
    return [np.asarray(v).tobytes() for _, v in sorted(result.params.items())], \
        [np.float64(loss).tobytes() for loss in result.losses]


@pytest.fixture(scope="module")
def client(shared_cluster):
    return shared_cluster.connect(shared_cluster.token, timeout=120)


@pytest.mark.parametrize("name", ["mlp", "cnn", "lm"])
def test_training_matches_local_pytorch(client, name):
    model, loss_fn, x, y = training_family(name, samples=20)  # 20 samples: round 2 wraps around
    ours, theirs, clip = SETUPS[name]
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = [n for n, _ in model.named_parameters()]
    records = []
    result = client.train(model, loss_fn, (x, y), optimizer=ours(), rounds=5, batch_size=BATCH,
                          micro_batch=MICRO, clip_grad_norm=clip, callback=records.append,
                          progress=False, timeout=ROUND_TIMEOUT)
    schedule = (lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.8 ** s)) \
        if name == "lm" else None
    want_losses, want_state = torch_training(model, loss_fn, x, y, 5, theirs, clip, schedule)
    assert_same_training(result, want_losses, want_state, start, names)
    # The model passed in is untouched; buffers come back as they were.
    for key, value in model.state_dict().items():
        assert torch.equal(value, start[key]), key
    assert set(result.state_dict) == set(start)
    # Each round: two verified micro-batch tasks, in the history and the callback alike.
    assert records == result.history and [r.round for r in records] == list(range(5))
    for record in result.history:
        assert record.tasks == BATCH // MICRO and record.verified_tasks == record.tasks
        assert record.samples == BATCH and record.rejected == 0 and record.grad_norm > 0
        assert record.job.startswith("g-")


def test_training_verified_by_freivalds_matches_local_pytorch(client, shared_cluster):
    """verification="freivalds": each micro-batch computed once, its matmuls with an inner size
    of 64 or more through OpenBLAS, every task checked by the node; the training still follows
    PyTorch's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 4))
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(16, 64, generator=g), torch.randint(0, 4, (16,), generator=g)
    loss_fn = torch.nn.functional.cross_entropy
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = [n for n, _ in model.named_parameters()]

    def checked():
        return shared_cluster.query("SELECT verdict, method FROM graph_results "
                                    "WHERE backend = 'cpu-reference+blas'")
    before = len(checked())
    result = client.train(model, loss_fn, (x, y), optimizer=optim.SGD(lr=0.1, momentum=0.9),
                          rounds=3, batch_size=BATCH, micro_batch=MICRO, progress=False,
                          timeout=ROUND_TIMEOUT, verification="freivalds")
    want_losses, want_state = torch_training(
        model, loss_fn, x, y, 3, lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), None)
    assert_same_training(result, want_losses, want_state, start, names)
    rows = checked()[before:]
    # One opinion per micro-batch task (2 per round), each decided by the node's check.
    assert len(rows) == 3 * BATCH // MICRO and all(r == ("accepted", "node-audit") for r in rows)
    with pytest.raises(InputError, match="verification is one of"):
        client.train(model, loss_fn, (x, y), rounds=1, batch_size=BATCH, progress=False,
                     verification="maybe")
    # Sent raw, past the client's check: the node refuses it before storing anything.
    from goblin import training as goblin_training
    from goblin.errors import GoblinError
    from goblin.wire import encode_tensor_frame
    layout = goblin_training.Layout(torch, model)
    request, arrays = goblin_training.train_request(
        client.connection, layout, loss_fn, x.numpy(), y.numpy(), layout.flat(), optim.SGD(lr=0.1), 0, 1,
        BATCH, MICRO, None, verification="freivalds")
    jobs = shared_cluster.query("SELECT count(*) FROM train_jobs")[0][0]
    request["train"]["verification"] = "maybe"
    with pytest.raises(GoblinError, match="'verification' is"):
        client.connection.request(request, [encode_tensor_frame(a) for a in arrays])
    assert shared_cluster.query("SELECT count(*) FROM train_jobs")[0][0] == jobs


class WeightGradientHeavy(torch.nn.Module):
    """Two convolutions whose only heavy node (docs/verification.md) is the second one's weight
    gradient: its forward sums 4·3·3 = 36 taps and its input gradient makes 4 channels, both under
    the thresholds, while its weight gradient sums 4 images × 8×8 positions into 16 channels."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.second = torch.nn.Conv2d(4, 16, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.second(torch.relu(self.first(x)))).mean(dim=(2, 3))


def test_a_convolutions_weight_gradient_runs_through_blas_under_freivalds(client, shared_cluster):
    """Protocol 9: a convolution's gradients are gemm nodes too. Here the weight gradient is the
    task's only one, so the volunteers report "cpu-reference+blas" only because they computed it
    through OpenBLAS, and the trained bits differ from a canonical (replicas) run's; the node's
    Freivalds check accepts every task and both runs follow PyTorch's."""
    torch.manual_seed(0)
    model = WeightGradientHeavy()
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(16, 3, 8, 8, generator=g), torch.randint(0, 16, (16,), generator=g)
    loss_fn = torch.nn.functional.cross_entropy
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = [n for n, _ in model.named_parameters()]
    query = "SELECT verdict, method FROM graph_results WHERE backend = 'cpu-reference+blas'"
    before = len(shared_cluster.query(query))

    def train(verification):
        return client.train(model, loss_fn, (x, y), optimizer=optim.SGD(lr=0.5, momentum=0.9),
                            rounds=3, batch_size=BATCH, micro_batch=MICRO, progress=False,
                            timeout=ROUND_TIMEOUT, verification=verification)

    checked, canonical = train("freivalds"), train("replicas")
    want_losses, want_state = torch_training(
        model, loss_fn, x, y, 3, lambda ps: torch.optim.SGD(ps, lr=0.5, momentum=0.9), None)
    assert_same_training(checked, want_losses, want_state, start, names)
    assert_same_training(canonical, want_losses, want_state, start, names)
    rows = shared_cluster.query(query)[before:]
    assert len(rows) == 3 * BATCH // MICRO and all(r == ("accepted", "node-audit") for r in rows)
    assert bits(checked)[0] != bits(canonical)[0]


def test_runs_repeat_bit_for_bit_and_resume_continues_to_the_same_bits(client):
    model, loss_fn, x, y = training_family("mlp", samples=24, seed=4)

    def run(rounds, resume=None):
        return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=rounds,
                            batch_size=BATCH, micro_batch=MICRO, progress=False, resume=resume,
                            timeout=ROUND_TIMEOUT)

    whole = run(4)
    assert bits(run(4)) == bits(whole)
    first = run(2)
    resumed = run(2, resume=first)
    assert resumed.rounds == 4 and resumed.job != first.job
    assert bits(resumed) == bits(whole)
    assert [r.round for r in resumed.history] == [0, 1, 2, 3]


def test_a_non_finite_loss_fails_its_round_and_applies_nothing(client):
    model, loss_fn, x, y = training_family("mlp", samples=16, seed=6)
    x = x.clone()
    x[BATCH + 1, 3] = float("nan")  # in round 1's batch
    with pytest.raises(TrainingError, match="round 1: the loss is nan") as caught:
        client.train(model, loss_fn, (x, y), optimizer=optim.SGD(lr=0.1), rounds=3,
                     batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=ROUND_TIMEOUT,
                     allow_nonfinite=True)  # past the client's check, to the node's
    assert caught.value.code == "invalid_input" and caught.value.job.startswith("t-")
    partial = caught.value.result
    assert partial.rounds == 1 and len(partial.history) == 1
    # What round 0 alone gives: the NaN never reached the parameters.
    want_losses, want_state = torch_training(model, loss_fn, x, y, 1,
                                             lambda ps: torch.optim.SGD(ps, lr=0.1), None)
    for name, value in partial.params.items():
        assert np.isfinite(value).all()
        np.testing.assert_allclose(value, want_state[name].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_size=8, micro_batch=3), "does not divide"),
    (dict(batch_size=64, micro_batch=8), "fewer than one batch"),
    (dict(batch_size=8, micro_batch=0), "positive integer"),
    (dict(batch_size=8, micro_batch=4, rounds=None), "rounds is needed"),
    (dict(batch_size=8, micro_batch=4, optimizer=object()), "goblin.optim"),
])
def test_bad_training_settings_are_refused_before_any_job(client, shared_cluster, kwargs, message):
    model, loss_fn, x, y = training_family("mlp", samples=16)
    settings = dict(rounds=2, progress=False)
    settings.update(kwargs)
    def jobs():
        return shared_cluster.query("SELECT (SELECT COUNT(*) FROM graph_jobs) + "
                                    "(SELECT COUNT(*) FROM train_jobs)")[0][0]

    before = jobs()
    with pytest.raises(InputError, match=message):
        client.train(model, loss_fn, (x, y), **settings)
    assert jobs() == before


def test_an_unsupported_layer_is_named(client):
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4),
                                torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 2)).train()
    x, y = torch.randn(8, 1, 6, 6), torch.randint(0, 2, (8,))
    with pytest.raises(UnsupportedOperator, match="GroupNorm"):
        client.train(model, torch.nn.functional.cross_entropy, (x, y), rounds=1, batch_size=8,
                     micro_batch=4, progress=False)


def test_a_lying_volunteer_during_training_is_caught_and_changes_nothing(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    _, liar = cluster.start_dishonest(corruption=1000.0)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    wait_for_volunteers(cluster, 3)
    client = cluster.connect(token, timeout=120)
    model, loss_fn, x, y = training_family("mlp", samples=24, seed=7)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    result = client.train(model, loss_fn, (x, y), optimizer=optim.Adam(lr=1e-2), rounds=3,
                          batch_size=BATCH, micro_batch=2, progress=False, timeout=ROUND_TIMEOUT)
    want_losses, want_state = torch_training(model, loss_fn, x, y, 3,
                                             lambda ps: torch.optim.Adam(ps, lr=1e-2), None)
    assert_same_training(result, want_losses, want_state, start,
                         [n for n, _ in model.named_parameters()])
    mine = graph_verdicts(cluster, liar)
    assert mine and all(v == "rejected" for _, v, _ in mine), mine
    assert quarantined(cluster, liar)
    assert sum(r.rejected for r in result.history) == len(mine)


def test_a_token_outside_the_vocabulary_fails_the_job_and_marks_no_volunteer(client,
                                                                             shared_cluster):
    model, loss_fn, x, y = training_family("lm", samples=8)
    x = x.clone()
    x[5, 2] = 13  # the vocabulary has 13 tokens: 0..12
    with pytest.raises(TrainingError, match="round 0: .*13") as caught:
        client.train(model, loss_fn, (x, y), optimizer=optim.Adam(), rounds=2, batch_size=BATCH,
                     micro_batch=MICRO, progress=False, timeout=ROUND_TIMEOUT)
    assert caught.value.code == "invalid_input"
    assert caught.value.result.rounds == 0 and caught.value.result.history == []
    marked = shared_cluster.query("SELECT COUNT(*) FROM graph_results WHERE verdict != 'accepted'")
    assert marked[0][0] == 0
    assert shared_cluster.query("SELECT COUNT(*) FROM volunteer_trust "
                                "WHERE quarantined_at IS NOT NULL")[0][0] == 0


def test_staff_see_training_jobs_with_their_rounds_and_verdicts(client, shared_cluster):
    model, loss_fn, x, y = training_family("mlp", samples=16, seed=8)
    result = client.train(model, loss_fn, (x, y), optimizer=optim.SGD(lr=0.1), rounds=2,
                          batch_size=BATCH, micro_batch=MICRO, progress=False,
                          timeout=ROUND_TIMEOUT)
    listing = [line.split() for line in shared_cluster.staff("jobs", "list").stdout.splitlines()]
    row = next(line for line in listing if line and line[0] == result.job)
    # Released, its data kept for the audits of its rounds' graph jobs.
    assert row[1:4] == ["train", "retained", "2/2"], row
    detail = shared_cluster.staff("jobs", "show", result.job).stdout
    assert re.search(r"^rounds +2/2 done$", detail, re.M), detail
    accepted = len(result.history) * (BATCH // MICRO) * 2  # two replicas per task
    assert re.search(r"^verdicts +%d accepted, 0 rejected$" % accepted, detail, re.M), detail
    # A round's graph job is part of the training job: not listed, shown as its round, and
    # neither fetched nor cancelled on its own.
    first = result.history[0]
    assert all(line[0] != first.job for line in listing if line), listing
    shown = shared_cluster.staff("jobs", "show", first.job).stdout
    assert re.search(r"^round +%d of training job %s$" % (first.round, result.job), shown,
                     re.M), shown
    with pytest.raises(InputError, match="of training job %s: fetch the training job"
                       % result.job):
        client.fetch_outputs(first.job)
    with pytest.raises(InputError, match="of training job %s: cancel the training job"
                       % result.job):
        client.cancel(first.job)
    assert client.audit(first.job).state == "clean"
