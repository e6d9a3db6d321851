"""goblin.optim against torch.optim: the same parameters and gradients for ten steps give the same
parameters (float32, within a few ulps), for every optimizer option Client.train offers, and
clip_grad_norm against torch.nn.utils.clip_grad_norm_."""

import numpy as np
import pytest

import goblin
from goblin import optim
from goblin.errors import InputError

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

CASES = [
    ("sgd", dict(lr=0.1), dict(lr=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2),
     dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-2)),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-3),
     dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-3)),
    ("adam", dict(lr=1e-2), dict(lr=1e-2)),
    ("adam", dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
     dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw", dict(lr=1e-2, weight_decay=0.1), dict(lr=1e-2, weight_decay=0.1)),
    ("adamw", dict(lr=1e-2, betas=(0.9, 0.95)), dict(lr=1e-2, betas=(0.9, 0.95))),
]
OURS = {"sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW}
THEIRS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def _run_both(ours, make_theirs, steps=10, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(4, 3), (5,), (2, 2, 2)]
    params = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    tensors = [torch.tensor(p.copy(), requires_grad=True) for p in params]
    theirs, schedule = make_theirs(tensors)
    for _ in range(steps):
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        for t, g in zip(tensors, grads):
            t.grad = torch.tensor(g.copy())
        theirs.step()
        if schedule is not None:
            schedule.step()
        ours.step(params, grads)
    return params, [t.detach().numpy() for t in tensors]


@pytest.mark.parametrize("kind, kwargs, torch_kwargs", CASES)
def test_optimizer_follows_torch(kind, kwargs, torch_kwargs):
    ours = OURS[kind](**kwargs)
    got, want = _run_both(ours, lambda ts: (THEIRS[kind](ts, **torch_kwargs), None))
    assert ours.steps == 10
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-7)
    # The state resumes: a copy continued for more steps equals the original continued.
    copy = OURS[kind](**kwargs)
    copy.load_state_dict(ours.state_dict())
    assert copy.steps == ours.steps and len(copy.state) == len(ours.state)


def test_a_learning_rate_schedule_matches_lambda_lr():
    ours = optim.SGD(lr=lambda step: 0.1 * 0.5 ** step, momentum=0.9)

    def theirs(ts):
        sgd = torch.optim.SGD(ts, lr=0.1, momentum=0.9)
        return sgd, torch.optim.lr_scheduler.LambdaLR(sgd, lambda step: 0.5 ** step)

    got, want = _run_both(ours, theirs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(max_norm):
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(7, 3), (4,)]]
    tensors = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for t, g in zip(tensors, grads):
        t.grad = torch.tensor(g.copy())
    want_norm = float(torch.nn.utils.clip_grad_norm_(tensors, max_norm))
    got_norm = optim.clip_grad_norm(grads, max_norm)
    assert got_norm == pytest.approx(want_norm, rel=1e-6)
    for g, t in zip(grads, tensors):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [lambda: optim.SGD(lr=-1), lambda: optim.Adam(betas=(1.0, 0.9)),
                                  lambda: optim.SGD(nesterov=True), lambda: optim.Adam(eps="x"),
                                  lambda: optim.AdamW(lr=float("nan"))])
def test_bad_settings_are_refused_clearly(make):
    with pytest.raises(InputError):
        make()


def test_a_schedule_that_returns_a_bad_rate_fails_the_step():
    opt = goblin.optim.SGD(lr=lambda step: -1.0)
    with pytest.raises(InputError, match="lr"):
        opt.step([np.zeros(2, np.float32)], [np.ones(2, np.float32)])
