"""Graphs bigger than any volunteer, end to end: a real lab node plans a job whose values do not
fit the connected volunteers' lent memory into stages (runs of its nodes, cut where the fewest
bytes cross), every stage task is verified (two replicas and the node's audits) before a later
stage reads its outputs, and the researcher gets the same bits as the same job run whole by
volunteers big enough for it. A dishonest volunteer's stage outputs never reach the next stage.
"""

import re

import numpy as np
import pytest
import torch
from torch.nn import functional as F

import goblin
from goblin import graph as gg
from goblin import optim
from goblin import reference
from goblin.training import TrainingError

from test_graph_network import graph_verdicts
from torch_programs import TiedDecoderLM
from test_observability import fetch

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 180.0
LAYERS = 4
WIDTH = 512  # a 512x512 f32 weight is 1 MiB
SMALL_VOLUNTEER = ["--memory-mb", "3"]
# The wide MLP's training step (wide_mlp, 256 rows per micro-batch) holds more than 2 MiB at once.
TRAINING_VOLUNTEER = ["--memory-mb", "2"]


def deep_mlp(batch=128, seed=11):
    """LAYERS of tanh(h·W + b) then a softmax: about 7 MiB of values in all, each layer's about
    2 MiB, so a volunteer lending 3 MiB holds one layer at a time and no more."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    h = g.input("f32", [batch, WIDTH])
    for _ in range(LAYERS):
        w = g.constant((rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32))
        b = g.constant(rng.standard_normal((WIDTH,)).astype(np.float32) * 0.1)
        h = g.tanh(g.add(g.matmul(h, w), b))
    g.output(g.softmax(h, dim=-1), g.argmax(h, dim=-1))
    return g


def inputs_for(batch=128, seed=5):
    return [np.random.default_rng(seed).standard_normal((batch, WIDTH)).astype(np.float32)]


def assert_close_to_reference(g, inputs, outputs):
    expected = reference.run(g, inputs)
    np.testing.assert_allclose(outputs[0], expected[0], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(outputs[1], expected[1])


def connected(cluster):
    """goblin_volunteers_connected from the node's /metrics."""
    _, _, body = fetch(cluster, "/metrics")
    for line in body.decode().splitlines():
        if line.startswith("goblin_volunteers_connected "):
            return int(float(line.split()[1]))
    raise AssertionError("no goblin_volunteers_connected in /metrics")


class Pool:
    """The test's volunteers: replaced as a whole, so a job is planned for exactly them."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.processes = []

    def replace(self, count, extra_args=(), dishonest=False):
        """Stops the volunteers, starts `count` (and the dishonest one); its id or None."""
        for process in self.processes:
            process.stop()
        self.processes = []
        self.cluster.wait_until(lambda: connected(self.cluster) == 0, 60, "no volunteer")
        liar = None
        if dishonest:
            process, liar = self.cluster.start_dishonest(corruption=1000.0)
            self.processes.append(process)
        for _ in range(count):
            self.processes.append(self.cluster.start_volunteer(threads=1, slots=2,
                                                               extra_args=extra_args))
        total = count + (1 if dishonest else 0)
        self.cluster.wait_until(lambda: connected(self.cluster) == total, 60,
                                "%d volunteers" % total)
        return liar


def run(cluster, token, job):
    client = cluster.connect(token)
    return job(client), client.last_summary


def staged_then_whole(cluster, job):
    """`job(client)` on two small volunteers, then on two that hold it whole: (staged outputs,
    staged summary, whole summary), the two outputs asserted equal bit for bit."""
    token = cluster.add_researcher()
    cluster.start_node()
    pool = Pool(cluster)
    pool.replace(2, SMALL_VOLUNTEER)
    staged, staged_summary = run(cluster, token, job)
    pool.replace(2)
    whole, whole_summary = run(cluster, token, job)
    for a, b in zip(staged, whole):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    return staged, staged_summary, whole_summary


def test_a_graph_bigger_than_every_volunteer_runs_in_stages_to_the_whole_graphs_bits(cluster):
    g, inputs = deep_mlp(), inputs_for()
    staged, staged_summary, whole_summary = staged_then_whole(
        cluster, lambda client: client.run(g, inputs, timeout=JOB_TIMEOUT))
    cluster.node.wait_for_line(re.compile(r"graph job g-\S+ accepted: .* (\d+) task\(s\) "
                                          r"\(1 batch range\(s\) cut into stages"), 5)
    assert staged_summary["tasks"] >= LAYERS  # one layer per stage at most
    assert whole_summary["tasks"] == 1
    assert_close_to_reference(g, inputs, staged)


def test_batch_ranges_cut_into_stages_merge_to_the_whole_graphs_bits(cluster):
    g, inputs = deep_mlp(), inputs_for()
    staged, staged_summary, whole_summary = staged_then_whole(
        cluster, lambda client: client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT))
    cluster.node.wait_for_line(re.compile(r"\(2 batch range\(s\) cut into stages"), 5)
    assert staged_summary["tasks"] >= 2 * 2  # each range in stages (two layers fit at 64 rows)
    assert whole_summary["tasks"] == 2
    assert_close_to_reference(g, inputs, staged)


def test_a_lying_volunteers_stage_outputs_never_reach_the_next_stage(cluster):
    """The dishonest volunteer (1 GiB lent) takes stage tasks beside two honest small ones and
    adds 1000 to an output element of each: every lie is rejected before a later stage reads it,
    and the job still has the whole graph's bits."""
    token = cluster.add_researcher()
    cluster.start_node()
    g, inputs = deep_mlp(), inputs_for()
    pool = Pool(cluster)

    def whole_job(client):
        return client.run(g, inputs, timeout=JOB_TIMEOUT)

    pool.replace(2)
    whole, _ = run(cluster, token, whole_job)
    liar = pool.replace(2, SMALL_VOLUNTEER, dishonest=True)
    staged, summary = run(cluster, token, whole_job)
    assert summary["tasks"] >= LAYERS
    for a, b in zip(staged, whole):
        assert a.tobytes() == b.tobytes()
    lies = [row for row in graph_verdicts(cluster, liar)]
    assert lies, "the liar computed no stage task"
    assert all(verdict == "rejected" for _, verdict, _ in lies)


def test_with_no_volunteer_connected_the_job_is_planned_for_the_configured_size(cluster):
    """--plan-volunteer-mb: a job submitted before any volunteer connects is cut for volunteers
    lending that much, so small volunteers that connect later compute it."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--plan-volunteer-mb", "3"])
    g, inputs = deep_mlp(), inputs_for()
    client = cluster.connect(token)
    job = client.submit_graph(g, inputs)
    cluster.node.wait_for_line(re.compile(r"graph job %s accepted: .*cut into stages" % job), 30)
    Pool(cluster).replace(2, SMALL_VOLUNTEER)
    outputs = client.fetch_outputs(job, timeout=JOB_TIMEOUT)
    assert client.last_summary["tasks"] >= LAYERS
    assert_close_to_reference(g, inputs, outputs)


def wide_mlp():
    """Activations outweigh parameters: a training step's parameters travel as one flat vector
    (and its gradient as another) that every stage reads, so those two must fit a volunteer."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                               torch.nn.Linear(256, 256), torch.nn.GELU(),
                               torch.nn.Linear(256, 8))


def wide_training():
    """train(client): wide_mlp, 2 rounds of 512 samples in micro-batches of 256."""
    g = torch.Generator().manual_seed(7)
    x, y = torch.randn(1024, 64, generator=g), torch.randint(0, 8, (1024,), generator=g)

    def train(client):
        return client.train(wide_mlp(), F.cross_entropy, (x, y), rounds=2, batch_size=512,
                            micro_batch=256, progress=False, timeout=JOB_TIMEOUT)

    return train


def staged_then_whole_training(cluster, token, pool, train, first_loss=None):
    """`train(client)` (2 rounds) on the small volunteers of `pool`, then on two big ones: the
    staged run's parameters and losses are those of the whole one, bit for bit, and its first
    loss `first_loss` (PyTorch's, when given) within float32's tolerance. Returns the staged
    run's TrainResult."""
    staged, _ = run(cluster, token, train)
    cluster.node.wait_for_line(re.compile(r"cut into stages"), 5)
    if first_loss is not None:
        assert abs(staged.history[0].loss - first_loss) <= 1e-4 * abs(first_loss)
    pool.replace(2)
    whole, _ = run(cluster, token, train)
    assert len(staged.history) == len(whole.history) == 2
    for name, tensor in whole.state_dict.items():
        assert torch.equal(staged.state_dict[name], tensor), name
    assert [r.loss for r in staged.history] == [r.loss for r in whole.history]
    return staged


def test_training_a_model_bigger_than_every_volunteer_gives_the_unsplit_bits(cluster):
    """Each micro-batch's training step (forward and backward of 256 rows, more than 10 MiB of
    values, more than 2 MiB held at once) is cut into stages for volunteers lending 2 MiB; the
    trained parameters equal, bit for bit, those of the same training on volunteers that hold the
    whole step."""
    token = cluster.add_researcher()
    cluster.start_node()
    pool, train = Pool(cluster), wide_training()

    pool.replace(2, TRAINING_VOLUNTEER)
    staged_then_whole_training(cluster, token, pool, train)


def test_a_liars_stage_outputs_in_a_training_round_are_never_used(cluster):
    """The dishonest volunteer takes the stage tasks of training rounds (forward and backward
    stages alike) beside two honest small volunteers: every lie is rejected before a later stage
    or the optimizer reads it, and the trained parameters are the bits of the same training run
    whole on honest volunteers."""
    token = cluster.add_researcher()
    cluster.start_node()
    pool, train = Pool(cluster), wide_training()

    pool.replace(2)
    whole, _ = run(cluster, token, train)
    liar = pool.replace(2, TRAINING_VOLUNTEER, dishonest=True)
    staged, _ = run(cluster, token, train)
    cluster.node.wait_for_line(re.compile(r"cut into stages"), 5)
    for name, tensor in whole.state_dict.items():
        assert torch.equal(staged.state_dict[name], tensor), name
    lies = graph_verdicts(cluster, liar)
    assert lies, "the liar computed no stage task"
    assert all(verdict == "rejected" for _, verdict, _ in lies)


def test_a_graph_that_cannot_be_cut_small_enough_waits_saying_why(cluster):
    """A matmul of two 1 MiB operands cannot fit a volunteer lending 1 MiB whatever the cut (a
    tile takes a block of one operand and the whole other one): the job waits, and its waiting
    notice names the node and what a task of it holds."""
    token = cluster.add_researcher()
    cluster.start_node()
    Pool(cluster).replace(2, ["--memory-mb", "1"])
    g = gg.Graph()
    x = g.input("f32", [WIDTH, WIDTH])
    w = g.constant(np.ones((WIDTH, WIDTH), dtype=np.float32))
    g.output(g.tanh(g.matmul(x, w)))
    client = cluster.connect(token)
    job = client.submit_graph(g, [np.ones((WIDTH, WIDTH), dtype=np.float32)])
    line = cluster.node.wait_for_line(re.compile(r"job %s waits: (.*)" % job), 30).group(1)
    assert "no connected volunteer lends the memory its tasks need (one holds 4 MiB" in line
    assert "cannot be cut into stages of 1048576 bytes" in line and "(matmul) alone holds" in line
    assert client.cancel(job) == "cancelled"


def survives_a_killed_volunteer_and_a_killed_node(cluster, make_model, data, small, batch_size,
                                                  micro_batch):
    """Trains `make_model()` whole on two big volunteers, then on three `small` ones: one
    volunteer is killed once stage results come in, the node is killed once a round has
    committed and restarted on the same database; the resumed job (re-attached with fetch_train)
    ends with the bits of the same training run whole and uninterrupted."""
    token = cluster.add_researcher()
    node = cluster.start_node()
    rounds, optimizer = 6, lambda: optim.AdamW(lr=1e-2)
    pool = Pool(cluster)
    pool.replace(2)
    whole, _ = run(cluster, token, lambda client: client.train(
        make_model(), F.cross_entropy, data, optimizer=optimizer(), rounds=rounds,
        batch_size=batch_size, micro_batch=micro_batch, progress=False, timeout=JOB_TIMEOUT))

    pool.replace(3, small)
    job = cluster.connect(token).submit_train(make_model(), F.cross_entropy, data,
                                              optimizer=optimizer(), rounds=rounds,
                                              batch_size=batch_size, micro_batch=micro_batch)

    def accepted_stage_results():
        return cluster.query("SELECT count(*) FROM graph_results r JOIN graph_tasks t "
                             "ON t.id = r.task_id JOIN graph_jobs j ON j.id = t.job_id "
                             "WHERE r.verdict = 'accepted' AND j.tasks > 2")[0][0]

    cluster.wait_until(lambda: accepted_stage_results() >= 2, JOB_TIMEOUT, "stage results")
    pool.processes.pop(0).kill9()
    cluster.wait_until(lambda: cluster.query("SELECT rounds_done FROM train_jobs WHERE id = ?",
                                             (job,))[0][0] >= 1, JOB_TIMEOUT, "a committed round")
    node.kill9()
    cluster.start_node(port=cluster.port)  # the two volunteers left reconnect by themselves
    resumed = cluster.connect(token).fetch_train(job, make_model(), optimizer=optimizer(),
                                                 batch_size=batch_size, timeout=JOB_TIMEOUT)
    assert resumed.history[-1].round == rounds - 1
    for name, tensor in whole.state_dict.items():
        assert torch.equal(resumed.state_dict[name], tensor), name


def test_staged_training_survives_a_killed_volunteer_and_a_killed_node(cluster):
    """Stages of the wide MLP's training step on volunteers lending 2 MiB."""
    g = torch.Generator().manual_seed(8)
    data = torch.randn(1024, 64, generator=g), torch.randint(0, 8, (1024,), generator=g)
    survives_a_killed_volunteer_and_a_killed_node(cluster, wide_mlp, data, TRAINING_VOLUNTEER,
                                                  512, 256)


def test_tiled_training_survives_a_killed_volunteer_and_a_killed_node(cluster):
    """Tiles of the 1024×1024 layer on volunteers lending 3 MiB."""
    g = torch.Generator().manual_seed(8)
    data = torch.randn(128, 64, generator=g), torch.randint(0, 8, (128,), generator=g)
    survives_a_killed_volunteer_and_a_killed_node(cluster, widest_layer_mlp, data,
                                                  SMALL_VOLUNTEER, 64, 32)


def test_stages_checked_alone_by_the_node_stay_within_the_reference_tolerance(cluster):
    """verification="freivalds": one small volunteer per stage task, its matmuls through BLAS,
    every stage checked by the node before the next reads it."""
    token = cluster.add_researcher()
    cluster.start_node()
    Pool(cluster).replace(2, SMALL_VOLUNTEER)
    g, inputs = deep_mlp(), inputs_for()
    client = cluster.connect(token)
    outputs = client.run(g, inputs, verification="freivalds", timeout=JOB_TIMEOUT)
    assert client.last_summary["tasks"] >= LAYERS
    assert client.last_summary["verdicts"]["rejected"] == 0
    assert_close_to_reference(g, inputs, outputs)


def test_a_nan_in_a_staged_round_fails_it_and_keeps_the_committed_rounds(cluster):
    """A NaN in round 1's batch flows through the stages of its training step (each stage is
    verified as computed: NaN is a value like any other) into the loss: the round fails cleanly,
    nothing of it is applied, and the partial result holds round 0 with the bits of the same
    round trained whole."""
    token = cluster.add_researcher()
    cluster.start_node()
    g = torch.Generator().manual_seed(9)
    x, y = torch.randn(1024, 64, generator=g), torch.randint(0, 8, (1024,), generator=g)
    x[512 + 3, 5] = float("nan")  # in round 1's batch
    pool = Pool(cluster)

    def train(client, rounds, data):
        return client.train(wide_mlp(), F.cross_entropy, data, optimizer=optim.SGD(lr=0.1),
                            rounds=rounds, batch_size=512, micro_batch=256, progress=False,
                            timeout=JOB_TIMEOUT, allow_nonfinite=True)

    pool.replace(2, TRAINING_VOLUNTEER)
    with pytest.raises(TrainingError, match="round 1: the loss is nan") as caught:
        run(cluster, token, lambda client: train(client, 3, (x, y)))
    cluster.node.wait_for_line(re.compile(r"cut into stages"), 5)
    partial = caught.value.result
    assert partial.rounds == 1 and len(partial.history) == 1
    pool.replace(2)
    whole, _ = run(cluster, token, lambda client: train(client, 1, (x[:512], y[:512])))
    for name, tensor in whole.state_dict.items():
        assert torch.isfinite(partial.state_dict[name]).all(), name
        assert torch.equal(partial.state_dict[name], tensor), name


def big_mlp():
    """Parameters bigger than a volunteer: four 512×512 layers, 4 MiB of weights (and as much of
    gradient), trained on volunteers lending 3 MiB. The node hands each stage only the slices of
    the flat parameter vector it reads and concatenates the gradient's parts itself."""
    torch.manual_seed(1)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(512, 512), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(512, 8))


def test_training_a_model_whose_parameters_exceed_every_volunteer_gives_the_unsplit_bits(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(128, 512, generator=g), torch.randint(0, 8, (128,), generator=g)
    params = parameter_bytes(big_mlp())
    assert params > 4 << 20
    pool = Pool(cluster)

    def train(client):
        return client.train(big_mlp(), F.cross_entropy, (x, y), optimizer=optim.AdamW(lr=1e-3),
                            rounds=2, batch_size=64, micro_batch=32, progress=False,
                            timeout=JOB_TIMEOUT)

    pool.replace(2, SMALL_VOLUNTEER)
    plan = cluster.connect(token).plan_train(big_mlp(), F.cross_entropy, (x, y), batch_size=64,
                                             micro_batch=32)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= 3 << 20 < params
    staged_then_whole_training(cluster, token, pool, train)


def widest_layer_mlp():
    """64 → 1024 → 1024 → 8: the middle weight alone is 4 MiB, more than a volunteer lends."""
    torch.manual_seed(2)
    return torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.Tanh(),
                               torch.nn.Linear(1024, 1024), torch.nn.Tanh(),
                               torch.nn.Linear(1024, 8))


def test_training_a_layer_bigger_than_every_volunteer_cuts_it_into_tiles(cluster):
    """The middle layer's weight (4 MiB) and its gradient exceed the 3 MiB a volunteer lends: its
    forward product, input gradient and weight gradient are cut into matmul tiles (each reading a
    block of the weight the node slices), planned and run within the lent memory; the trained
    parameters equal, bit for bit, those of the same training on volunteers that hold the whole
    step."""
    token = cluster.add_researcher()
    cluster.start_node()
    g = torch.Generator().manual_seed(9)
    x, y = torch.randn(128, 64, generator=g), torch.randint(0, 8, (128,), generator=g)
    middle = widest_layer_mlp()[2].weight
    assert middle.numel() * 4 > 3 << 20
    pool = Pool(cluster)

    def train(client):
        return client.train(widest_layer_mlp(), F.cross_entropy, (x, y),
                            optimizer=optim.AdamW(lr=1e-3), rounds=2, batch_size=64,
                            micro_batch=32, progress=False, timeout=JOB_TIMEOUT)

    pool.replace(2, SMALL_VOLUNTEER)
    plan = cluster.connect(token).plan_train(widest_layer_mlp(), F.cross_entropy, (x, y),
                                             batch_size=64, micro_batch=32)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= 3 << 20
    # The middle layer's forward, input gradient and weight gradient.
    assert plan.tiled_matmuls == 3, str(plan)
    assert sum(stage.tiles for stage in plan.stages) > 3 and "tiles: 3 matmul(s)" in str(plan)
    staged_then_whole_training(cluster, token, pool, train)


def test_inference_through_a_layer_bigger_than_every_volunteer_runs_in_tiles(cluster):
    """The captured forward of the same model (its weights are inputs the node holds): the middle
    product, 4 MiB of weight, runs as column tiles, each task reading a block of the weight, on
    volunteers lending 3 MiB; the outputs equal those of volunteers that run it whole, and
    PyTorch's within the float32 tolerance."""
    model = widest_layer_mlp()
    x = np.random.default_rng(3).standard_normal((256, 64)).astype(np.float32)
    captured = goblin.capture(model, torch.from_numpy(x))
    staged, staged_summary, whole_summary = staged_then_whole(
        cluster, lambda client: client.run(captured, [x], timeout=JOB_TIMEOUT))
    assert whole_summary["tasks"] == 1 < staged_summary["tasks"]
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(staged[0], want, rtol=1e-4, atol=1e-5)


def test_tiles_checked_alone_by_the_node_and_a_liars_tiles_never_used(cluster):
    """verification="freivalds": each tile task goes to one small volunteer, its product through
    BLAS, checked by the node's Freivalds before anything reads it; within float32's tolerance of
    PyTorch. Then with replicas beside the dishonest volunteer (which adds 1000 to an element of
    every output): every lie it told on the tiled job is rejected, and the outputs keep the bits
    of honest volunteers."""
    token = cluster.add_researcher()
    cluster.start_node()
    model = widest_layer_mlp()
    x = np.random.default_rng(4).standard_normal((256, 64)).astype(np.float32)
    captured = goblin.capture(model, torch.from_numpy(x))
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    pool = Pool(cluster)
    pool.replace(2, SMALL_VOLUNTEER)
    client = cluster.connect(token)
    [checked] = client.run(captured, [x], verification="freivalds", timeout=JOB_TIMEOUT)
    assert client.last_summary["tasks"] > 3
    assert client.last_summary["verdicts"]["rejected"] == 0
    np.testing.assert_allclose(checked, want, rtol=1e-4, atol=1e-5)
    [honest] = client.run(captured, [x], timeout=JOB_TIMEOUT)
    liar = pool.replace(2, SMALL_VOLUNTEER, dishonest=True)
    [lied_to], summary = run(cluster, token,
                             lambda c: c.run(captured, [x], timeout=JOB_TIMEOUT))
    assert summary["tasks"] > 3
    assert lied_to.tobytes() == honest.tobytes()
    lies = [row for row in graph_verdicts(cluster, liar)]
    assert lies, "the liar computed no tile task"
    assert all(verdict == "rejected" for _, verdict, _ in lies)


def peak_resident_bytes(process):
    """A running process's peak resident memory (VmHWM in /proc)."""
    with open("/proc/%d/status" % process.popen.pid, encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM for %s" % process.name)


def test_a_small_volunteers_resident_memory_grows_by_about_what_it_lends(cluster):
    """Volunteers lending 3 MiB train the 4 MiB model in stages for 3 rounds: each one's peak
    resident memory grows by less than twice what it lends (it grew by 10-13 MiB before volunteers
    kept blocks of 64 KiB and more mapped for themselves; what remains above the lent memory is the
    frames a task arrives and leaves in, which the plan does not count yet)."""
    token = cluster.add_researcher()
    cluster.start_node()
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(192, 512, generator=g), torch.randint(0, 8, (192,), generator=g)
    pool = Pool(cluster)
    pool.replace(2, SMALL_VOLUNTEER)
    client = cluster.connect(token)
    # A small job first, so that what every job sets up once (BLAS, buffers) is in the baseline.
    client.train(torch.nn.Linear(512, 8), F.cross_entropy, (x, y), rounds=1, batch_size=64,
                 micro_batch=32, progress=False, timeout=JOB_TIMEOUT)
    before = [peak_resident_bytes(p) for p in pool.processes]
    client.train(big_mlp(), F.cross_entropy, (x, y), optimizer=optim.AdamW(lr=1e-3), rounds=3,
                 batch_size=64, micro_batch=32, progress=False, timeout=JOB_TIMEOUT)
    cluster.node.wait_for_line(re.compile(r"cut into stages"), 5)
    grown = [peak_resident_bytes(p) - b for p, b in zip(pool.processes, before)]
    lent = 3 << 20
    assert all(growth < 2 * lent for growth in grown), grown


LM_VOLUNTEER = ["--memory-mb", "1"]


def tied_lm():
    """TiedDecoderLM: 2 blocks of width 128, 512 tokens tied in and out, 1.8 MiB of parameters."""
    torch.manual_seed(3)
    return TiedDecoderLM()


def next_token_data(vocab, rows, length=16):
    """Random token ids and the same shifted by one (the next-token targets)."""
    x = torch.randint(0, vocab, (rows, length), generator=torch.Generator().manual_seed(8))
    return x, torch.roll(x, -1, dims=1)


def parameter_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def lm_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def test_a_decoder_lm_with_tied_embeddings_trains_and_runs_split_to_the_unsplit_bits(cluster):
    """A decoder LM of our own whose output head is its token embedding (one parameter read by
    the lookup and by the last matmul), on volunteers lending 1 MiB, less than its parameters:
    trained in stages to the bits of the unsplit training, then run for inference along the batch
    (each chunk through the graph captured at the chunk's size, cut in stages) to the bits of big
    volunteers and within float32's tolerance of PyTorch."""
    token = cluster.add_researcher()
    cluster.start_node()
    x, y = next_token_data(512, 64)
    params = parameter_bytes(tied_lm())
    assert params > 1 << 20
    pool = Pool(cluster)

    def train(client):
        return client.train(tied_lm(), lm_loss, (x, y), optimizer=optim.AdamW(lr=1e-3),
                            rounds=2, batch_size=16, micro_batch=8, progress=False,
                            timeout=JOB_TIMEOUT)

    pool.replace(2, LM_VOLUNTEER)
    plan = cluster.connect(token).plan_train(tied_lm(), lm_loss, (x, y), batch_size=16,
                                             micro_batch=8)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= 1 << 20 < params
    staged_then_whole_training(cluster, token, pool, train)

    model = tied_lm()
    tokens = x[:32].numpy()
    captured = goblin.capture(model, torch.from_numpy(tokens[:8]))

    def infer(client):
        return client.run(captured, [tokens], batch=0, micro_batch=8, timeout=JOB_TIMEOUT)

    whole, whole_summary = run(cluster, token, infer)
    pool.replace(2, LM_VOLUNTEER)
    split, split_summary = run(cluster, token, infer)
    assert whole_summary["tasks"] == 4 < split_summary["tasks"]
    assert split[0].tobytes() == whole[0].tobytes()
    with torch.no_grad():
        want = model(torch.from_numpy(tokens)).numpy()
    np.testing.assert_allclose(split[0], want, rtol=1e-4, atol=1e-4)


def lm12():
    """TiedDecoderLM of 12 blocks of width 256: 36 MiB of parameters."""
    torch.manual_seed(3)
    return TiedDecoderLM(vocab=256, dim=256, heads=4, layers=12, length=16)


def test_a_12_block_lm_four_times_bigger_than_every_volunteer_trains_to_the_unsplit_bits(cluster):
    """36 MiB of parameters on volunteers lending 8 MiB: each round's micro-batches are cut into
    stages that each hold at most 8 MiB, and two rounds give the bits of the same training on
    volunteers that hold the whole step; round 0's loss is PyTorch's within float32's
    tolerance."""
    token = cluster.add_researcher()
    cluster.start_node()
    x, y = next_token_data(256, 32)
    params = parameter_bytes(lm12())
    lent = 8 << 20
    assert params > 4 * lent
    pool = Pool(cluster)
    pool.replace(2, ["--memory-mb", "8"])
    plan = cluster.connect(token).plan_train(lm12(), lm_loss, (x, y), batch_size=8,
                                             micro_batch=4)
    assert plan.cut_into_stages and plan.waits is None, str(plan)
    assert plan.largest_task_bytes <= lent

    def train(client):
        return client.train(lm12(), lm_loss, (x, y), optimizer=optim.AdamW(lr=1e-3), rounds=2,
                            batch_size=8, micro_batch=4, progress=False, timeout=JOB_TIMEOUT)

    with torch.no_grad():
        want = lm_loss(lm12()(x[:8]), y[:8]).item()
    staged_then_whole_training(cluster, token, pool, train, first_loss=want)


def test_a_value_bigger_than_every_volunteer_is_refused_at_submit(cluster):
    """Volunteers lending 1 MiB and a 2 MiB input read whole by a tanh: no split of the graph fits
    (a value is never cut), so the submission is refused at once, naming the node, the value's
    size and the largest volunteer's memory, and nothing is stored; split along its batch dim
    into 4 chunks the same computation runs."""
    token = cluster.add_researcher()
    cluster.start_node()
    Pool(cluster).replace(2, ["--memory-mb", "1"])
    g = gg.Graph()
    g.output(g.tanh(g.input("f32", [1024, 512])))
    x = np.random.default_rng(6).standard_normal((1024, 512)).astype(np.float32)
    client = cluster.connect(token)
    with pytest.raises(goblin.LimitExceededError) as refused:
        client.run(g, [x], timeout=JOB_TIMEOUT)
    why = str(refused.value)
    assert "(tanh) reads or makes a value of 2097152 bytes" in why, why
    assert "the largest volunteer lends 1048576 bytes" in why, why
    assert cluster.query("SELECT count(*) FROM graph_jobs")[0][0] == 0
    [y] = client.run(g, [x], batch=0, chunks=4, timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(y, np.tanh(x), rtol=1e-6, atol=1e-7)
