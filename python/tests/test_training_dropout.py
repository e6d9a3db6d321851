"""Dropout in training (docs/training.md, "Dropout") on a real lab node and real volunteers: the
captured step draws the catalog's counter-based dropout_mask, round r with seed dropout_seed + r
and each micro-batch its own stream. The training equals PyTorch's on the same masks (rebuilt
here from goblin.reference.dropout_mask), replicas agree bit for bit, and the masks differ from
one micro-batch and one round to the next."""

import copy

import numpy as np
import pytest

from goblin import optim, reference
from goblin.errors import InputError

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

BATCH, MICRO, ROUNDS, SEED = 8, 4, 4, 1234
P1, P2 = 0.25, 0.5
TIMEOUT = 180.0


def model_and_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Dropout(P1), torch.nn.GELU(),
                                torch.nn.Linear(16, 16), torch.nn.Dropout(P2), torch.nn.ReLU(),
                                torch.nn.Linear(16, 3))
    g = torch.Generator().manual_seed(3)
    return model, torch.randn(24, 6, generator=g), torch.randint(0, 3, (24,), generator=g)


def round_masks(r):
    """The two dropout layers' masks for round r's whole batch: micro-batch c of layer k draws
    from offset (elements of the layers before k) + c · (elements of both), seed SEED + r."""
    drawn = MICRO * 16 + MICRO * 16
    masks = []
    for k, p in enumerate((P1, P2)):
        parts = [reference.dropout_mask([MICRO, 16], p, seed=SEED + r, offset=k * MICRO * 16 + c * drawn)
                 for c in range(BATCH // MICRO)]
        masks.append(torch.from_numpy(np.concatenate(parts)))
    return masks


class GivenMasks(torch.overrides.TorchFunctionMode):
    """F.dropout multiplies by the given masks, in call order."""

    def __init__(self, masks):
        super().__init__()
        self.masks = list(masks)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.dropout:
            return args[0] * self.masks.pop(0)
        return func(*args, **(kwargs or {}))


def torch_training(model, x, y):
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for r in range(ROUNDS):
        rows = torch.arange(r * BATCH, (r + 1) * BATCH) % x.shape[0]
        opt.zero_grad()
        with GivenMasks(round_masks(r)):
            loss = torch.nn.functional.cross_entropy(model(x[rows]), y[rows])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


def flat(state, names):
    return np.concatenate([np.asarray(state[n], dtype=np.float64).ravel() for n in names])


@pytest.fixture(scope="module")
def client(shared_cluster):
    return shared_cluster.connect(shared_cluster.token, timeout=120)


def test_dropout_training_matches_pytorch_on_the_same_masks(client):
    model, x, y = model_and_data()
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = [n for n, _ in model.named_parameters()]

    def run():
        return client.train(model, torch.nn.functional.cross_entropy, (x, y),
                            optimizer=optim.SGD(lr=0.1, momentum=0.9), rounds=ROUNDS,
                            batch_size=BATCH, micro_batch=MICRO, progress=False,
                            timeout=TIMEOUT, dropout_seed=SEED)

    result = run()
    want_losses, want_state = torch_training(model, x, y)
    np.testing.assert_allclose(result.losses, want_losses, rtol=1e-5)
    moved = np.linalg.norm(flat(want_state, names) - flat(start, names))
    off = np.linalg.norm(flat(result.state_dict, names) - flat(want_state, names))
    assert moved > 0 and off <= 1e-2 * moved, (off, moved)
    for record in result.history:  # both replicas of every micro-batch drew the same masks
        assert record.verified_tasks == record.tasks == BATCH // MICRO and record.rejected == 0
    again = run()
    assert [np.float64(v).tobytes() for v in again.losses] == \
        [np.float64(v).tobytes() for v in result.losses]

    # The masks matter: the same training with other masks (another seed) differs.
    other = client.train(model, torch.nn.functional.cross_entropy, (x, y),
                         optimizer=optim.SGD(lr=0.1, momentum=0.9), rounds=ROUNDS,
                         batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=TIMEOUT,
                         dropout_seed=SEED + 1000)
    assert not np.allclose(other.losses, result.losses, rtol=1e-4)


def test_masks_differ_between_micro_batches_and_rounds():
    first, second = round_masks(0), round_masks(1)
    assert not torch.equal(first[0][:MICRO], first[0][MICRO:])  # two micro-batches of round 0
    assert not torch.equal(first[0], second[0])  # round 0 and round 1
    for mask, p in zip(first, (P1, P2)):
        kept = (mask != 0).double().mean().item()
        assert abs(kept - (1 - p)) < 0.2 and set(np.unique(mask.numpy())) <= {0, np.float32(1 / (1 - p))}


def test_dropout_seed_is_checked(client):
    model, x, y = model_and_data()
    for seed in (-1, 1 << 63, 1.5, True):
        with pytest.raises(InputError, match="dropout_seed"):
            client.submit_train(model, torch.nn.functional.cross_entropy, (x, y), rounds=1,
                                batch_size=BATCH, micro_batch=MICRO, dropout_seed=seed)
