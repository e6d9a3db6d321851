"""Real model code spread over volunteers smaller than the model: torchvision's ResNet-18 and
VisionTransformer, Hugging Face's GPT-2 (tied LM head) and BERT, each captured at the
micro-batch size and run along the batch on a real lab node, every chunk through the same graph
cut into stages that each fit what the volunteers lend. The outputs are the bits the same job
gives on volunteers that hold it whole, and PyTorch's within float32's tolerance.
"""

import numpy as np
import pytest
import torch

import goblin
from goblin import optim

import real_models
from test_graph_stages import (JOB_TIMEOUT, Pool, parameter_bytes, run,
                               staged_then_whole_training)

pytestmark = pytest.mark.integration

MICRO_BATCH = 4
ROWS = 16
# What each model's volunteers lend: less than its parameters.
LENDS_MB = {"resnet18": 16, "vision_transformer": 1, "gpt2_lm": 1, "bert": 1}


@pytest.mark.parametrize("name", sorted(real_models.ALL))
def test_a_real_model_bigger_than_every_volunteer_runs_along_the_batch_in_stages(cluster, name):
    model, make_inputs = real_models.ALL[name]()
    lent = LENDS_MB[name] << 20
    assert parameter_bytes(model) > 2 * lent
    captured = goblin.capture(model, *make_inputs(MICRO_BATCH, 1))
    inputs = [x.numpy() for x in make_inputs(ROWS, 2)]
    batch = {"inputs": [0] * len(inputs), "outputs": [0]}

    def infer(client):
        return client.run(captured, inputs, batch=batch, micro_batch=MICRO_BATCH,
                          timeout=JOB_TIMEOUT)

    token = cluster.add_researcher()
    cluster.start_node()
    pool = Pool(cluster)
    pool.replace(2, ["--memory-mb", str(LENDS_MB[name])])
    plan = cluster.connect(token).plan(captured, inputs, batch=batch, micro_batch=MICRO_BATCH)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= lent, str(plan)
    split, split_summary = run(cluster, token, infer)
    pool.replace(2)
    whole, whole_summary = run(cluster, token, infer)
    assert whole_summary["tasks"] == ROWS // MICRO_BATCH < split_summary["tasks"]
    assert split[0].tobytes() == whole[0].tobytes()
    with torch.no_grad():
        want = model(*[torch.from_numpy(x) for x in inputs]).numpy()
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(split[0], want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("name", sorted(real_models.TO_TRAIN))
def test_a_real_model_bigger_than_every_volunteer_trains_in_stages_to_the_unsplit_bits(cluster,
                                                                                      name):
    make = real_models.TO_TRAIN[name]
    model, loss_fn, data = make()
    lent = LENDS_MB[name] << 20
    assert parameter_bytes(model) > 2 * lent
    x, y = data(8, 3)

    def train(client):
        fresh, _, _ = make()
        return client.train(fresh, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-3), rounds=2,
                            batch_size=4, micro_batch=2, progress=False, timeout=JOB_TIMEOUT)

    token = cluster.add_researcher()
    cluster.start_node()
    pool = Pool(cluster)
    pool.replace(2, ["--memory-mb", str(LENDS_MB[name])])
    plan = cluster.connect(token).plan_train(model, loss_fn, (x, y), batch_size=4, micro_batch=2)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= lent, str(plan)
    with torch.no_grad():
        want = loss_fn(model(x[:4]), y[:4]).item()
    staged = staged_then_whole_training(cluster, token, pool, train, first_loss=want)
    if name == "gpt2_lm":  # the head is the token embedding: trained under both names
        head, embedding = "model.lm_head.weight", "model.transformer.wte.weight"
        assert torch.equal(staged.state_dict[head], staged.state_dict[embedding])
        assert not torch.equal(staged.state_dict[head], model.state_dict()[head])
