#!/usr/bin/env python3
"""A volunteer that lies: it computes every tile (and every graph task, with the numpy reference
interpreter) honestly, then corrupts one element of it.

Speaks the volunteer side of docs/protocol.md (/v1/volunteer) so the integration tests can check
that the lab node rejects its tiles, requeues them for an honest volunteer and records the verdicts.
Prints `dishonest volunteer v-...` once registered, then one line per task and verdict.

    python dishonest_volunteer.py --node ws://127.0.0.1:PORT [--corruption 1000.0]
"""

import argparse
import inspect
import json
import sys
import time

import numpy as np
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from goblin import reference
from goblin.wire import decode_tensor_frame, encode_tensor_frame

MAX_TENSOR_BYTES = 1 << 30
DELAY = 2.0


def say(text: str) -> None:
    print(text, flush=True)


def open_connection(url: str):
    options = {"compression": None, "max_size": MAX_TENSOR_BYTES + 65536, "open_timeout": 10}
    if "proxy" in inspect.signature(connect).parameters:
        options["proxy"] = None
    return connect(url.rstrip("/") + "/v1/volunteer", **options)


def hello(ws, catalog: int = 3) -> str:
    ops = ["matmul", "graph"] if catalog >= 3 else ["matmul"]
    ws.send(json.dumps({
        "type": "hello", "id": 1, "protocol": 1, "catalog": catalog, "identity": None,
        "capabilities": {"backend": "cpu-numpy", "threads": 1, "memory_bytes": 1 << 30,
                         "dtypes": ["f32", "f64"], "ops": ops, "slots": 1}}))
    welcome = json.loads(ws.recv(timeout=20))
    if welcome.get("type") != "welcome" or not str(welcome.get("volunteer", "")).startswith("v-"):
        raise SystemExit("unexpected answer to hello: %r" % welcome)
    return welcome["volunteer"]


MODES = ("add", "nan", "shape", "dtype", "slow")  # slow: right answers, each after --delay s


def corrupted_product(a: np.ndarray, b: np.ndarray, corruption: float,
                      mode: str = "add") -> np.ndarray:
    """A wrong tile: one element off by `corruption` (add) or NaN (nan), a row missing (shape),
    or the other float dtype (dtype)."""
    product = np.array(a @ b)  # same dtype as the inputs
    if mode == "shape":
        return product[:-1] if product.shape[0] > 1 else product[:, :-1]
    if mode == "dtype":
        return product.astype(np.float64 if product.dtype == np.float32 else np.float32)
    if product.size:
        product.flat[product.size // 2] = np.nan if mode == "nan" else (
            product.flat[product.size // 2] + corruption)
    return product


def serve(ws, corruption: float, mode: str) -> None:
    while True:
        message = json.loads(ws.recv())
        tensors = [decode_tensor_frame(ws.recv(timeout=60))
                   for _ in range(message.get("tensors", 0))]
        kind = message.get("type")
        if kind == "task":
            handle_task(ws, message, tensors, corruption, mode)
        elif kind == "verdict":
            say("verdict task %s attempt %s: %s" % (message.get("task"), message.get("attempt"),
                                                    message.get("verdict")))
        else:
            say("ignored message %s" % json.dumps(message)[:200])


def handle_task(ws, task, tensors, corruption: float, mode: str) -> None:
    ids = {"task": task.get("task"), "attempt": task.get("attempt")}
    if task.get("op") == "graph":
        handle_graph_task(ws, ids, task, tensors, corruption, mode)
        return
    if task.get("op") != "matmul" or len(tensors) != 2:
        ws.send(json.dumps(dict(ids, type="task_error", code="invalid_message",
                                message="only matmul with 2 tensors")))
        return
    started = time.perf_counter()
    product = corrupted_product(tensors[0], tensors[1], corruption, mode)
    seconds = time.perf_counter() - started
    ws.send(json.dumps(dict(ids, type="result", backend="cpu-numpy", compute_seconds=seconds,
                            tensors=1)))
    ws.send(encode_tensor_frame(product))
    say("task %s attempt %s: returned a wrong %s %s tile (%s)"
        % (ids["task"], ids["attempt"], "x".join(map(str, product.shape)), product.dtype, mode))


def corrupted_outputs(outputs, corruption: float, mode: str):
    """Graph outputs with the first one made wrong the way corrupted_product makes a tile wrong."""
    if mode == "slow":
        time.sleep(DELAY)
        return [np.asarray(o) for o in outputs]
    first = np.array(outputs[0])
    if mode == "shape":
        first = first[:-1] if first.ndim and first.shape[0] > 1 else np.zeros((7,), first.dtype)
    elif mode == "dtype":
        first = first.astype(np.float64 if first.dtype == np.float32 else np.float32)
    elif first.size:
        first.flat[first.size // 2] = np.nan if mode == "nan" else (
            first.flat[first.size // 2] + first.dtype.type(corruption))
    return [first] + [np.asarray(o) for o in outputs[1:]]


def handle_graph_task(ws, ids, task, tensors, corruption: float, mode: str) -> None:
    started = time.perf_counter()
    outputs = corrupted_outputs(reference.run(task["graph"], tensors), corruption, mode)
    seconds = time.perf_counter() - started
    ws.send(json.dumps(dict(ids, type="result", op="graph", backend="cpu-numpy",
                            compute_seconds=seconds, tensors=len(outputs))))
    for output in outputs:
        ws.send(encode_tensor_frame(np.ascontiguousarray(output)))
    say("graph task %s attempt %s: returned wrong outputs (%s)" % (ids["task"], ids["attempt"], mode))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--node", required=True, help="ws://HOST:PORT of the lab node")
    parser.add_argument("--corruption", type=float, default=1000.0,
                        help="added to one element of every returned tile (default 1000)")
    parser.add_argument("--mode", choices=MODES, default="add",
                        help="how every returned tile is wrong (default: add)")
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per graph task (slow)")
    parser.add_argument("--catalog", type=int, default=3, help="catalog said in the hello (1: matmul only)")
    args = parser.parse_args()
    global DELAY
    DELAY = args.delay
    with open_connection(args.node) as ws:
        say("dishonest volunteer %s" % hello(ws, args.catalog))
        try:
            serve(ws, args.corruption, args.mode)
        except ConnectionClosed as exc:
            received = exc.rcvd
            say("connection closed: %s" % (
                "%d %s" % (received.code, received.reason) if received else "no close frame"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
