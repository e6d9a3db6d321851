"""The volunteer side of docs/protocol.md: one WebSocket connection per identity, the hello /
welcome handshake, control messages with their announced tensor frames, and a receive loop that
hands every task and verdict to a strategy (strategies.py).

One `Identity` runs on its own thread; all identities of a process share the strategy object,
which guards its shared state with a lock.
"""

import hashlib
import inspect
import json
import sys
import threading
import time

import numpy as np
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from . import frame

PROTOCOL = 1
CACHE_PROTOCOL = 4  # the first that names task inputs by digest
CATALOG = 3
MAX_TENSOR_BYTES = 1 << 30
_print_lock = threading.Lock()


def say(text: str) -> None:
    with _print_lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def open_socket(node: str, source: str = ""):
    """A socket to the node's volunteer endpoint; from the local address `source` when given
    (127.0.0.2, say: another loopback address, as a second machine would be)."""
    options = {"compression": None, "max_size": MAX_TENSOR_BYTES + 65536, "open_timeout": 10}
    if source:
        options["source_address"] = (source, 0)  # passed on to socket.create_connection
    if "proxy" in inspect.signature(connect).parameters:
        options["proxy"] = None
    return connect(node.rstrip("/") + "/v1/volunteer", **options)


def hello_message(slots: int, ops, cache_bytes: int = 0, backend: str = "cpu-numpy",
                  memory_bytes: int = 1 << 30, protocol: int = 0) -> dict:
    hello = {"type": "hello", "id": 1, "protocol": PROTOCOL, "catalog": CATALOG, "identity": None,
             "capabilities": {"backend": backend, "threads": 1, "memory_bytes": memory_bytes,
                              "dtypes": ["f32", "f64"], "ops": list(ops), "slots": slots}}
    if cache_bytes:
        hello["protocol"] = CACHE_PROTOCOL
        hello["capabilities"]["input_cache_bytes"] = cache_bytes
    hello["protocol"] = max(hello["protocol"], protocol)
    return hello


def input_digest(array) -> str:
    """docs/protocol.md, "Inputs by digest": SHA-256 of "<dtype>:<d0>,<d1>,…,:" and the bytes."""
    header = "%s:%s:" % (frame.dtype_name(array.dtype), "".join("%d," % d for d in array.shape))
    return hashlib.sha256(header.encode() + np.ascontiguousarray(array).tobytes()).hexdigest()


class Refused(Exception):
    """The node closed or answered the hello with something other than a welcome."""


def register(node: str, slots: int, ops, cache_bytes: int = 0, backend: str = "cpu-numpy",
             source: str = "", memory_bytes: int = 1 << 30, protocol: int = 0):
    """Connects and says hello without an identity; returns (socket, welcome)."""
    ws = open_socket(node, source)
    try:
        ws.send(json.dumps(hello_message(slots, ops, cache_bytes, backend, memory_bytes,
                                         protocol)))
        welcome = json.loads(ws.recv(timeout=20))
    except ConnectionClosed as exc:
        ws.close()
        received = exc.rcvd
        raise Refused("%d %s" % (received.code, received.reason) if received else "no close frame")
    except TimeoutError:
        ws.close()
        raise Refused("no welcome within 20 s")
    volunteer = str(welcome.get("volunteer", ""))
    if welcome.get("type") != "welcome" or not volunteer.startswith("v-"):
        ws.close()
        raise Refused("answered %r" % welcome)
    return ws, welcome


class NodeViolation(Exception):
    """The node broke docs/protocol.md."""


class Identity:
    """One registered volunteer: its socket, its id and the tasks it holds."""

    def __init__(self, index: int, ws, welcome: dict, slots: int, strategy):
        self.index = index
        self.ws = ws
        self.id = welcome["volunteer"]
        self.slots = slots
        self.strategy = strategy
        self.held = {}  # (task, attempt) -> the task message, while this identity holds it
        self.seen = set()  # (task, attempt) of every task frame received
        self.kept = {}  # digest -> array the node told this connection to keep
        self.closed = threading.Event()
        self._send_lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=self.id, daemon=True)

    def send(self, message: dict, arrays=()) -> None:
        frames = [frame.encode(a) for a in arrays]
        with self._send_lock:
            self.ws.send(json.dumps(dict(message, tensors=len(frames))))
            for data in frames:
                self.ws.send(data)

    def result(self, task: int, attempt: int, arrays, op: str = "matmul",
               seconds: float = 0.001) -> None:
        message = {"type": "result", "task": task, "attempt": attempt,
                   "backend": self.strategy.backend,
                   "compute_seconds": seconds}
        if op == "graph":
            message["op"] = "graph"
        self.send(message, arrays)

    def task_error(self, task: int, attempt: int, code: str, text: str, op: str) -> None:
        message = {"type": "task_error", "task": task, "attempt": attempt, "code": code,
                   "message": text[:200]}
        if op == "graph":
            message["op"] = "graph"
        self.send(message)

    def log(self, text: str) -> None:
        say("%s identity %s" % (text, self.id))

    def _receive(self):
        message = json.loads(self.ws.recv(timeout=0.2))
        arrays = []
        for _ in range(message.get("tensors", 0)):
            data = self.ws.recv(timeout=60)
            if isinstance(data, str):  # docs/protocol.md: a protocol error of the node
                raise NodeViolation("a text frame while tensors of %s were due: %s"
                                    % (json.dumps(message)[:200], data[:200]))
            arrays.append(frame.decode(data))
        return message, arrays

    def _run(self) -> None:
        try:
            while True:
                try:
                    message, arrays = self._receive()
                except TimeoutError:
                    self.strategy.tick(self)
                    continue
                self._dispatch(message, arrays)
                self.strategy.tick(self)
        except ConnectionClosed as exc:
            received = exc.rcvd
            self.log("closed: %s" % ("%d %s" % (received.code, received.reason)
                                     if received else "no close frame"))
        except NodeViolation as exc:
            self.log("node protocol violation: %s" % exc)
        except Exception as exc:  # a bug here must show in the test log, not vanish
            self.log("crashed: %s: %s" % (type(exc).__name__, exc))
        finally:
            self.ws.close()
            self.closed.set()

    def _resolve(self, message: dict, arrays) -> list:
        """Every graph input of a task with "input_refs", in order; keeps what it is told to."""
        coming, inputs = list(arrays), []
        for ref in message["input_refs"]:
            if ref is None or ref.get("keep"):
                if not coming:
                    raise NodeViolation("input_refs name more tensors than came")
                inputs.append(coming.pop(0))
                if ref is not None:
                    if input_digest(inputs[-1]) != ref["digest"]:
                        raise NodeViolation("a kept input does not match its digest")
                    self.kept[ref["digest"]] = inputs[-1]
            elif ref["digest"] in self.kept:
                inputs.append(self.kept[ref["digest"]])
            else:
                raise NodeViolation("task names input %s, never kept here" % ref["digest"][:12])
        return inputs

    def _dispatch(self, message: dict, arrays) -> None:
        kind = message.get("type")
        if kind == "forget_inputs":
            for digest in message.get("digests", []):
                self.kept.pop(digest, None)
            self.log("forgot %d inputs" % len(message.get("digests", [])))
            return
        if kind == "task":
            if "input_refs" in message:
                arrays = self._resolve(message, arrays)
            key = (message.get("task"), message.get("attempt"))
            self.seen.add(key)
            self.held[key] = message
            if len(self.held) > self.slots and self.strategy.answers:
                self.log("over-slots: holding %d of %d" % (len(self.held), self.slots))
            self.log("task %s attempt %s op %s" % (key[0], key[1], message.get("op")))
            self.strategy.on_task(self, message, arrays)
        elif kind == "verdict":
            self.log("verdict task %s attempt %s: %s" % (message.get("task"),
                                                         message.get("attempt"),
                                                         message.get("verdict")))
            self.strategy.on_verdict(self, message)
        else:
            self.log("ignored %s" % json.dumps(message)[:200])

    def answered(self, task: int, attempt: int) -> None:
        self.held.pop((task, attempt), None)


def wait_forever(identities) -> None:
    while not all(identity.closed.is_set() for identity in identities):
        time.sleep(0.5)
