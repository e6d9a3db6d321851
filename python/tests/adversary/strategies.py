"""One class per lie. A strategy sees every task and verdict of every identity of the process
(volunteer.Identity calls on_task, on_verdict and, between messages, tick) and answers.

Matmul strategies lie on matmul tiles and compute graph tasks honestly; graph strategies lie on
graph tasks and compute tiles honestly.
"""

import threading
import time

import numpy as np

from . import evaluator

GRACE_SECONDS = 0.5
UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}


def gamma(k: int, u: float) -> float:
    return k * u / (1.0 - k * u)


def element_bounds(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """γ_K·(|A||B|)_ij in float64: the sound bound of every element of A·B in the inputs' dtype."""
    u = UNIT_ROUNDOFF[np.dtype(a.dtype)]
    return gamma(a.shape[1], u) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def honest_tile(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.matmul(a, b), dtype=a.dtype)


def offset_outputs(outputs, offset: float):
    """Honest outputs with a deterministic offset on the middle element of each output: two
    identities lying this way about one task return the same wrong answer."""
    lied = []
    for out in outputs:
        out = np.array(out)
        if out.size and out.dtype.kind == "f":
            out.flat[out.size // 2] += out.dtype.type(offset)
        elif out.size and out.dtype.kind in "iu":
            out.flat[out.size // 2] += 1
        elif out.size and out.dtype.kind == "b":
            out.flat[out.size // 2] = not out.flat[out.size // 2]
        lied.append(out)  # a C-order copy; np.ascontiguousarray would make a scalar 1-d
    return lied


class Strategy:
    """Honest unless a subclass overrides a lie. `options` is the parsed command line."""

    identities = 1
    # Whether it answers its leases (so that holding more than its slots means the node sent too
    # many): a hoarder does not know when its leases expired.
    answers = True
    # Graph inputs it asks the node to name by digest (protocol 4); 0: every input travels.
    input_cache_bytes = 0
    # The protocol its hello says; 0: the oldest it speaks (4 when it keeps inputs by digest).
    protocol = 0
    # The backend its results name (cpu-numpy is not canonical: compared under the derived
    # tolerance; a strategy with canonical bits may name cpu-reference) and its hello's (the
    # node leases a task's second replica on another hello backend first).
    backend = "cpu-numpy"
    hello_backend = "cpu-numpy"

    def __init__(self, options):
        self.options = options
        self.lock = threading.Lock()
        self.ids = []

    # -- hooks -----------------------------------------------------------------------------------
    def on_task(self, who, task: dict, arrays) -> None:
        if task.get("op") == "graph":
            self.graph_task(who, task, arrays)
        elif task.get("op") == "matmul" and len(arrays) == 2:
            self.matmul_task(who, task, arrays[0], arrays[1])
        else:
            who.task_error(task.get("task"), task.get("attempt"), "invalid_message",
                           "unknown op", str(task.get("op")))
            who.answered(task.get("task"), task.get("attempt"))

    def on_verdict(self, who, verdict: dict) -> None:
        pass

    def tick(self, who) -> None:
        pass

    # -- matmul ----------------------------------------------------------------------------------
    def matmul_task(self, who, task, a, b) -> None:
        lying = type(self).tile is not Strategy.tile
        self.answer_tile(who, task, self.tile(a, b), "lie" if lying else "honest")

    def tile(self, a, b) -> np.ndarray:
        return honest_tile(a, b)

    def answer_tile(self, who, task, tile, note: str) -> None:
        who.result(task["task"], task["attempt"], [tile])
        who.answered(task["task"], task["attempt"])
        who.log("answered task %s attempt %s: %s %s %s" % (
            task["task"], task["attempt"], note, "x".join(map(str, tile.shape)), tile.dtype))

    # -- graphs ----------------------------------------------------------------------------------
    def graph_inputs(self, task, arrays):
        """The inputs it computes on, and whether they are not the ones the task named."""
        return arrays, False

    def graph_task(self, who, task, arrays) -> None:
        started = time.perf_counter()
        arrays, stale = self.graph_inputs(task, arrays)
        altered = []
        try:
            outputs = evaluator.run(task["graph"], arrays, self.graph_alteration(task, altered))
        except (evaluator.Unsupported, KeyError, TypeError, ValueError) as exc:
            who.task_error(task["task"], task["attempt"], "invalid_input", str(exc), "graph")
            who.answered(task["task"], task["attempt"])
            who.log("refused graph task %s attempt %s: %s" % (task["task"], task["attempt"], exc))
            return
        offset = self.lies_on_graph(who, task)
        if offset:
            outputs = offset_outputs(outputs, self.options.offset)
        lie = offset or stale or bool(altered)
        who.result(task["task"], task["attempt"], outputs, op="graph",
                   seconds=time.perf_counter() - started)
        who.answered(task["task"], task["attempt"])
        who.log("answered graph task %s attempt %s: %s" % (task["task"], task["attempt"],
                                                            "lie" if lie else "honest"))

    def lies_on_graph(self, who, task) -> bool:
        return False

    def graph_alteration(self, task, altered):
        """An evaluator `alter` hook that lies on intermediates (appending what it altered to
        `altered`), or None."""
        return None


# -- matmul lies ----------------------------------------------------------------------------------

class PastBound(Strategy):
    """One element off by F× its own sound bound γ_K·(|A||B|)_ij (F = --factor)."""

    def tile(self, a, b):
        c = honest_tile(a, b)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        bounds = element_bounds(a, b)
        i, j = c.shape[0] // 2, c.shape[1] // 2
        c[i, j] = c.dtype.type(exact[i, j] + self.options.factor * bounds[i, j])
        return c


class RowScale(Strategy):
    def tile(self, a, b):
        c = honest_tile(a, b)
        c[c.shape[0] // 2] *= c.dtype.type(1.001)
        return c


class LazyZeros(Strategy):
    def tile(self, a, b):
        return np.zeros((a.shape[0], b.shape[1]), a.dtype)


class NaN(Strategy):
    value = float("nan")

    def tile(self, a, b):
        c = honest_tile(a, b)
        c.flat[c.size // 2] = self.value
        return c


class Inf(NaN):
    value = float("inf")


class Shape(Strategy):
    def tile(self, a, b):
        c = honest_tile(a, b)
        return np.ascontiguousarray(c[:-1] if c.shape[0] > 1 else c[:, :-1])


class DType(Strategy):
    def tile(self, a, b):
        c = honest_tile(a, b)
        return c.astype(np.float64 if c.dtype == np.float32 else np.float32)


class Replay(Strategy):
    """The first tile of each shape is honest; every later task of that shape gets it again."""

    def __init__(self, options):
        super().__init__(options)
        self.earlier = {}

    def matmul_task(self, who, task, a, b):
        key = (a.shape[0], b.shape[1], str(a.dtype))
        with self.lock:
            earlier = self.earlier.setdefault(key, (task["task"], honest_tile(a, b)))
        if earlier[0] == task["task"]:
            self.answer_tile(who, task, earlier[1], "honest")
        else:
            self.answer_tile(who, task, earlier[1], "replayed task %s" % earlier[0])


class Duplicate(Strategy):
    def matmul_task(self, who, task, a, b):
        tile = honest_tile(a, b)
        who.result(task["task"], task["attempt"], [tile])
        self.answer_tile(who, task, tile, "honest, sent twice")


class NeverLeased(Strategy):
    """Before answering its own task honestly, sends zero tiles for an attempt of that task it never
    held and for a task id nobody was given, and holds its own lease until 0.5 s after their
    verdicts came (or --hold s passed): a node whose stale results free slots sends it more tasks
    meanwhile, which volunteer.Identity reports as `over-slots`."""

    def __init__(self, options):
        super().__init__(options)
        self.waiting = {}  # identity id -> list of [task, tile, bogus keys, deadline]

    def matmul_task(self, who, task, a, b):
        zeros = np.zeros((a.shape[0], b.shape[1]), a.dtype)
        bogus = [(task["task"], task["attempt"] + 1), (task["task"] + 1000003, 1)]
        for key in bogus:
            who.result(key[0], key[1], [zeros])
            who.log("sent never-leased result task %s attempt %s" % key)
        with self.lock:
            self.waiting.setdefault(who.id, []).append(
                [task, honest_tile(a, b), set(bogus), time.monotonic() + self.options.hold])

    def on_verdict(self, who, verdict):
        key = (verdict.get("task"), verdict.get("attempt"))
        with self.lock:
            for entry in self.waiting.get(who.id, []):
                entry[2].discard(key)
                if not entry[2]:  # a slot freed by those verdicts gets its task within this grace
                    entry[3] = min(entry[3], time.monotonic() + GRACE_SECONDS)

    def tick(self, who):
        with self.lock:
            entries = self.waiting.get(who.id, [])
            ready = [e for e in entries if time.monotonic() > e[3]]
            self.waiting[who.id] = [e for e in entries if e not in ready]
        for task, tile, _, _ in ready:
            self.answer_tile(who, task, tile, "honest")


class Foreign(Strategy):
    """Two identities: the first holds each of its leases; the second sends a zero tile naming that
    lease, and also guesses leases of other volunteers (the two task ids below its own, attempt 1). The
    holder answers honestly once the foreign result's verdict came (or --hold s passed)."""

    identities = 2

    def __init__(self, options):
        super().__init__(options)
        self.held = {}  # (task, attempt) of the holder -> [task, tile, attacked, verdict_or_deadline]
        self.mine = set()  # leases of the liar, which it must not name

    def matmul_task(self, who, task, a, b):
        key = (task["task"], task["attempt"])
        if who.index == 0:
            with self.lock:
                # answered after --hold s even if the liar never names it (its socket closed)
                self.held[key] = [task, honest_tile(a, b), False,
                                  time.monotonic() + 3 * self.options.hold]
            return
        with self.lock:
            self.mine.add(key)
        zeros = np.zeros((a.shape[0], b.shape[1]), a.dtype)
        # Only ids below its own: those were leased before (to someone else); a higher one may be
        # leased to this identity next, and would then be its own lease, not a foreign one.
        for delta in (-2, -1):
            guess = (task["task"] + delta, 1)
            with self.lock:
                taken = guess in self.mine or guess in self.held
            if not taken and guess[0] > 0:
                who.result(guess[0], guess[1], [zeros])
                who.log("sent foreign result task %s attempt %s (guessed)" % guess)
        self.answer_tile(who, task, honest_tile(a, b), "honest")

    def on_verdict(self, who, verdict):
        key = (verdict.get("task"), verdict.get("attempt"))
        if who.index == 1:
            with self.lock:
                if key in self.held and self.held[key][2]:
                    self.held[key][3] = 0.0  # its verdict came: the holder may answer now

    def tick(self, who):
        now = time.monotonic()
        with self.lock:
            items = list(self.held.items())
        for key, entry in items:
            if who.index == 1 and not entry[2]:
                tile = entry[1]
                who.result(key[0], key[1], [np.zeros_like(tile)])
                who.log("sent foreign result task %s attempt %s (the holder's lease)" % key)
                with self.lock:
                    entry[2], entry[3] = True, now + self.options.hold
            elif who.index == 0 and now >= entry[3]:
                with self.lock:
                    self.held.pop(key, None)
                self.answer_tile(who, entry[0], entry[1], "honest (after the foreign result)")


class AfterVerdict(Strategy):
    """Answers honestly, then sends a zero tile for the same (task, attempt) after its verdict."""

    def __init__(self, options):
        super().__init__(options)
        self.shapes = {}
        self.resent = set()

    def matmul_task(self, who, task, a, b):
        tile = honest_tile(a, b)
        with self.lock:
            self.shapes[(task["task"], task["attempt"])] = (tile.shape, tile.dtype)
        self.answer_tile(who, task, tile, "honest")

    def on_verdict(self, who, verdict):
        key = (verdict.get("task"), verdict.get("attempt"))
        with self.lock:
            if key not in self.shapes or key in self.resent:
                return
            self.resent.add(key)
            shape, dtype = self.shapes[key]
        who.result(key[0], key[1], [np.zeros(shape, dtype)])
        who.log("sent after-verdict result task %s attempt %s" % key)


class Hoarder(Strategy):
    """Takes every lease it is offered and never answers."""

    answers = False

    def on_task(self, who, task, arrays):
        who.log("hoarding task %s attempt %s (%d tasks received)"
                % (task.get("task"), task.get("attempt"), len(who.seen)))


# -- graph lies -----------------------------------------------------------------------------------

class Collude(Strategy):
    """N identities (--identities, default 2) that all return honest + offset for every task."""

    identities = 2

    def lies_on_graph(self, who, task):
        return True


class Sleeper(Collude):
    """Honest for the first --honest-tasks distinct tasks the process sees, then colludes."""

    def __init__(self, options):
        super().__init__(options)
        self.order = {}

    def lies_on_graph(self, who, task):
        with self.lock:
            position = self.order.setdefault(task["task"], len(self.order))
        return position >= self.options.honest_tasks


class AuditDodger(Collude):
    """Honest only on tasks that look audited: a re-sent task, attempt > --audited-above (default 2:
    the two replicas of a task are its attempts 1 and 2, a third opinion or a re-send is later)."""

    def lies_on_graph(self, who, task):
        return task["attempt"] <= self.options.audited_above


class Sybil(Collude):
    """Registers identities until the node refuses (or --max-identities), reports the count, then
    colludes with --identities of them."""


class StaleInputs(Strategy):
    """Keeps inputs by digest (protocol 4) and computes every later task on the first tensor it
    was given at each named position: yesterday's parameters, honestly multiplied."""

    input_cache_bytes = 1 << 26

    def __init__(self, options):
        super().__init__(options)
        self.first = {}  # input position -> the first array named there

    def graph_inputs(self, task, arrays):
        refs = task.get("input_refs") or []
        used, stale = list(arrays), False
        with self.lock:
            for i, ref in enumerate(refs):
                if ref is None:
                    continue
                first = self.first.setdefault(i, arrays[i])
                if first.shape == arrays[i].shape and not np.array_equal(first, arrays[i]):
                    used[i], stale = first, True
        return used, stale


class GemmPastBound(Strategy):
    """On a task that names gemm_nodes (matmuls the node checks by Freivalds instead of comparing
    bits), shifts one element of the first one's value by F× its own bound (F = --factor) and
    computes everything after it from the shifted value, so only the matmul check can see it."""

    identities = 2
    lied_ops = ("matmul",)

    def graph_alteration(self, task, altered):
        gemm = set(task.get("gemm_nodes") or [])
        if not gemm:
            return None

        def alter(node, args, value):
            if node["id"] not in gemm or altered or node["op"] not in self.target(task) or \
                    not value.size:
                return value
            bounds = self.element_bounds(node, args, value.dtype)
            index = int(np.argmax(bounds))  # the element whose bound is the largest
            lied = np.array(value)
            lied.flat[index] = lied.flat[index] + lied.dtype.type(
                self.options.factor * bounds.flat[index])
            altered.append(node["id"])
            return lied

        return alter

    def target(self, task) -> tuple:
        """The ops it lies on in this task."""
        return self.lied_ops

    def element_bounds(self, node, args, dtype) -> np.ndarray:
        a, b = (np.asarray(x, np.float64) for x in args)
        return gamma(a.shape[-1], UNIT_ROUNDOFF[dtype]) * np.matmul(np.abs(a), np.abs(b))


class ConvGradientPastBound(GemmPastBound):
    """gemm-past-bound on the convolution gradients, which the node names in gemm_nodes to
    volunteers of protocol 9 (docs/protocol.md): it says 9 in its hello and lies on the input
    gradient in odd-numbered tasks, on the weight gradient in even ones. An element's bound is
    γ_K·(|dy| ⊛ |w|) (resp. the weight gradient's |·| analogue), K its reduction length."""

    protocol = 9
    lied_ops = ("conv2d_weight_grad", "conv2d_input_grad")

    def target(self, task) -> tuple:
        return (self.lied_ops[int(task["task"]) % 2],)

    def element_bounds(self, node, args, dtype) -> np.ndarray:
        attrs = node.get("attrs", {})
        groups = int(attrs.get("groups", 1))
        if node["op"] == "conv2d_input_grad":  # K = O/groups·kh·kw
            reduction = args[1].shape[0] // groups * args[1].shape[2] * args[1].shape[3]
        else:  # K = N·OH·OW
            reduction = args[1].shape[0] * args[1].shape[2] * args[1].shape[3]
        magnitudes = evaluator.conv_gradient(node["op"], [np.abs(a) for a in args], attrs)
        return gamma(reduction, UNIT_ROUNDOFF[dtype]) * magnitudes


MATMUL = {"past-bound": PastBound, "row-scale": RowScale, "lazy-zeros": LazyZeros, "nan": NaN,
          "inf": Inf, "shape": Shape, "dtype": DType, "replay": Replay, "duplicate": Duplicate,
          "never-leased": NeverLeased, "foreign": Foreign, "after-verdict": AfterVerdict,
          "hoarder": Hoarder}
GRAPH = {"collude": Collude, "sleeper": Sleeper, "audit-dodger": AuditDodger, "sybil": Sybil,
         "stale-inputs": StaleInputs, "gemm-past-bound": GemmPastBound,
         "conv-gradient-past-bound": ConvGradientPastBound}
STRATEGIES = dict(MATMUL, **GRAPH, honest=Strategy)

