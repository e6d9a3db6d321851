"""The vanisher: one identity that takes a task and disconnects, then says hello again with its
saved identity (docs/protocol.md: such hellos are not rate-limited) and does it again, up to
--max-identities times. Against a node that offers the task again each time, nothing finishes."""

import json

from websockets.exceptions import ConnectionClosed

from . import volunteer


def run(options, ops) -> int:
    ws, welcome = volunteer.register(options.node, options.slots, ops)
    identity = {"volunteer": welcome["volunteer"], "secret": welcome["secret"]}
    volunteer.say("adversary identity %s" % identity["volunteer"])
    vanished = 0
    while vanished < options.max_identities:
        task = _first_task(ws)
        ws.close()
        if task is not None:
            vanished += 1
            volunteer.say("vanished with task %s attempt %s identity %s"
                          % (task.get("task"), task.get("attempt"), identity["volunteer"]))
        try:
            ws = volunteer.open_socket(options.node)
            hello = volunteer.hello_message(options.slots, ops)
            hello["identity"] = identity
            ws.send(json.dumps(hello))
            json.loads(ws.recv(timeout=20))
        except (ConnectionClosed, OSError, TimeoutError) as exc:
            volunteer.say("vanisher stopped: %s" % exc)
            return 0
    volunteer.say("vanisher done: vanished %d times" % vanished)
    return 0


def _first_task(ws):
    """Reads until a task message (its tensors not awaited); None when the node closes."""
    try:
        while True:
            message = ws.recv(timeout=60)
            if isinstance(message, str) and json.loads(message).get("type") == "task":
                return json.loads(message)
    except (ConnectionClosed, TimeoutError):
        return None
