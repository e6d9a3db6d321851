"""The patient colluding pair: two identities that answer every task with the
project's own canonical bits (canonical.py) until both have a history, then lie only on the tasks
both of them hold, so no honest replica ever disagrees with a lie and only the node's own checks
can see it."""

import os
import threading
import time

import numpy as np
from websockets.exceptions import ConnectionClosed

from . import canonical, evaluator
from .strategies import Strategy


def poisoned(outputs):
    """One element of each float output moved by 0.5 + 0.25·max|output| (the issue's gradient
    lie); both identities compute the same honest bits, so they send the same wrong answer."""
    lied = []
    for out in outputs:
        out = np.array(out)
        if out.size and out.dtype.kind == "f":
            peak = float(np.max(np.abs(out))) if np.isfinite(out).all() else 1.0
            out.flat[out.size // 2] += out.dtype.type(0.5 + 0.25 * peak)
        lied.append(out)  # a C-order copy; np.ascontiguousarray would make a scalar 1-d
    return lied


def nudged(outputs):
    """The middle element of the first output one ulp up: a value the node's cheap check of a
    matmul output accepts (it is within the rounding bound), but not the canonical bits."""
    lied = [np.array(out) for out in outputs]
    first = lied[0] if lied else None
    if first is not None and first.size and first.dtype.kind == "f":
        middle = first.size // 2
        first.flat[middle] = np.nextafter(first.flat[middle], first.dtype.type(np.inf))
    return lied


class PatientPair(Strategy):
    """Honest (canonical bits from --runner, else the evaluator) until each identity answered
    --honest-tasks tasks; then a graph task both identities receive within --pair-wait seconds is
    answered with the same lie by both, at most --lies tasks (0: no limit); a task only one of
    them holds is answered honestly. With --careless-after N, after N such lies it lies on every
    task (so an honest replica beside it gets it caught: a late catch, after lies were used), once
    it answered --careless-gap more tasks honestly. --wake-file keeps it honest until that file
    exists; once --careless-file exists it lies on every task. With
    --nudge the lies before that are one-ulp nudges (nudged()), logged as "nudge"."""

    identities = 2
    backend = "cpu-reference"  # canonical: replicas are compared bit for bit
    hello_backend = "cpu-eigen"  # what the project's own volunteer says: no odd one out

    def __init__(self, options):
        super().__init__(options)
        self.partner_came = threading.Condition(self.lock)
        self.holders = {}  # task id -> indices of the identities that received it
        self.decided = {}  # task id -> whether both lie on it (decided once, for both)
        self.answered_by = {}  # identity index -> graph tasks answered
        self.lies_told = 0
        self.careless_tasks = set()  # task ids lied about once careless
        self.answered_at_last_lie = 0  # graph tasks answered (both identities) at the last lie

    def awake(self) -> bool:
        counts = [self.answered_by.get(i, 0) for i in range(self.options.identities or 2)]
        limit = self.options.lies
        woken = not self.options.wake_file or os.path.exists(self.options.wake_file)
        return woken and min(counts) >= self.options.honest_tasks and \
            (not limit or self.lies_told < limit)

    def careless_now(self) -> bool:
        return bool(self.options.careless_file) and os.path.exists(self.options.careless_file)

    def both_lie(self, who, task) -> bool:
        task_id = task["task"]
        with self.partner_came:
            self.holders.setdefault(task_id, set()).add(who.index)
            self.partner_came.notify_all()
            if task_id not in self.decided and self.careless_now():
                self.decided[task_id] = True
                self.careless_tasks.add(task_id)
            careless = self.options.careless_after
            if careless and self.lies_told >= careless and task_id not in self.decided:
                # Careless once it answered --careless-gap tasks since its last lie, honest
                # until then.
                answered = sum(self.answered_by.values())
                self.decided[task_id] = \
                    answered - self.answered_at_last_lie >= self.options.careless_gap
                if self.decided[task_id]:
                    self.careless_tasks.add(task_id)
            if task_id not in self.decided and not self.awake():
                self.decided[task_id] = False
            deadline = time.monotonic() + self.options.pair_wait
            while task_id not in self.decided and len(self.holders[task_id]) < 2:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.partner_came.wait(remaining)
            if task_id not in self.decided:
                self.decided[task_id] = len(self.holders[task_id]) >= 2
                self.lies_told += self.decided[task_id]
                if self.decided[task_id]:
                    self.answered_at_last_lie = sum(self.answered_by.values())
            return self.decided[task_id]

    def graph_task(self, who, task, arrays) -> None:
        # Its own thread: the identity keeps receiving (its partner's task among them) meanwhile.
        threading.Thread(target=self.answer_closed_or_not, args=(who, task, arrays),
                         daemon=True).start()

    def answer_closed_or_not(self, who, task, arrays) -> None:
        try:
            self.answer(who, task, arrays)
        except ConnectionClosed:  # quarantined meanwhile: the receive loop reports the close
            who.log("closed before answering task %s attempt %s" % (task["task"],
                                                                   task["attempt"]))

    def answer(self, who, task, arrays) -> None:
        lie = self.both_lie(who, task)
        started = time.perf_counter()
        try:
            if self.options.runner:
                outputs = canonical.run(self.options.runner, task["graph"], arrays)
            else:
                outputs = evaluator.run(task["graph"], arrays)
        except Exception as exc:  # the runner refused it: say so, as an honest volunteer would
            who.task_error(task["task"], task["attempt"], "invalid_input", str(exc), "graph")
            who.answered(task["task"], task["attempt"])
            who.log("refused graph task %s attempt %s: %s" % (task["task"], task["attempt"], exc))
            return
        nudge = lie and self.options.nudge and task["task"] not in self.careless_tasks
        if lie:
            outputs = nudged(outputs) if nudge else poisoned(outputs)
        who.result(task["task"], task["attempt"], outputs, op="graph",
                   seconds=time.perf_counter() - started)
        who.answered(task["task"], task["attempt"])
        with self.lock:
            self.answered_by[who.index] = self.answered_by.get(who.index, 0) + 1
        said = "nudge" if nudge else "lie" if lie else "honest"
        who.log("answered graph task %s attempt %s: %s" % (task["task"], task["attempt"], said))
