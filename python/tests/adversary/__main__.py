"""python -m adversary --node ws://HOST:PORT --strategy NAME [options]

Prints `adversary identity v-…` for each registered identity, then one line per task, answer and
verdict (each ending in `identity v-…`); the sybil strategy first prints
`sybil registered N of M (refused: …)`.
"""

import argparse
import importlib.abc
import sys


class _NoGoblin(importlib.abc.MetaPathFinder):
    """The adversary is written from the protocol alone: importing the goblin package is a bug."""

    def find_spec(self, name, path=None, target=None):
        if name == "goblin" or name.startswith("goblin."):
            raise ImportError("the adversary must not import %s" % name)
        return None


sys.meta_path.insert(0, _NoGoblin())

from . import patient, strategies, vanisher, volunteer  # noqa: E402  (after the guard on purpose)

STRATEGIES = dict(strategies.STRATEGIES, **{"patient-pair": patient.PatientPair,
                                            "vanisher": strategies.Strategy})


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m adversary", description=__doc__.split("\n")[0])
    parser.add_argument("--node", required=True, help="ws://HOST:PORT of the lab node")
    parser.add_argument("--strategy", required=True, choices=sorted(STRATEGIES))
    parser.add_argument("--identities", type=int, help="identities to register (default per strategy)")
    parser.add_argument("--slots", type=int, default=2, help="slots each identity asks for")
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="the memory each identity says it lends, MiB")
    parser.add_argument("--factor", type=float, default=2.5,
                        help="past-bound, gemm-past-bound, conv-gradient-past-bound: error as a "
                             "multiple of the element's own bound")
    parser.add_argument("--offset", type=float, default=7.0, help="graph lies: added to outputs")
    parser.add_argument("--honest-tasks", type=int, default=50,
                        help="sleeper: honest tasks first (patient-pair: per identity)")
    parser.add_argument("--lies", type=int, default=0,
                        help="patient-pair: lie on at most this many tasks (0: no limit)")
    parser.add_argument("--pair-wait", type=float, default=1.0,
                        help="patient-pair: seconds an identity waits for its partner to receive "
                             "the same task before it answers honestly")
    parser.add_argument("--runner", help="patient-pair: goblin-run-graph, for canonical answers")
    parser.add_argument("--careless-after", type=int, default=0,
                        help="patient-pair: after this many lies on shared tasks, lie on every "
                             "task (0: never)")
    parser.add_argument("--careless-gap", type=int, default=0,
                        help="patient-pair: tasks answered honestly after the --careless-after "
                             "lies before it turns careless (so those lies' jobs finish first)")
    parser.add_argument("--wake-file",
                        help="patient-pair: honest until this file exists (a test creates it near "
                             "the end of a job, so the pair lies only there)")
    parser.add_argument("--careless-file",
                        help="patient-pair: once this file exists, lie on every task")
    parser.add_argument("--nudge", action="store_true",
                        help="patient-pair: the lies before --careless-after move one element of "
                             "the first output by one ulp (within a matmul's rounding bound)")
    parser.add_argument("--addresses", default="",
                        help="local addresses the identities connect from, in turn (comma-"
                             "separated, e.g. 127.0.0.2,127.0.0.3: one machine each)")
    parser.add_argument("--audited-above", type=int, default=2,
                        help="audit-dodger: attempts above this look audited (answered honestly)")
    parser.add_argument("--max-identities", type=int, default=200,
                        help="sybil: stop registering after this many (vanisher: vanishing)")
    parser.add_argument("--hold", type=float, default=2.0,
                        help="never-leased, foreign: seconds a lease is held at most before answering")
    return parser.parse_args(argv)


def register_sybils(options, ops) -> list:
    """Registers until refused; returns the (socket, welcome) pairs of the first --identities."""
    kept, count, refused = [], 0, "none"
    keep = options.identities or 2
    while count < options.max_identities:
        try:
            ws, welcome = volunteer.register(options.node, options.slots, ops)
        except (volunteer.Refused, OSError) as exc:
            refused = str(exc)
            break
        count += 1
        if len(kept) < keep:
            kept.append((ws, welcome))
        else:
            ws.close()
    volunteer.say("sybil registered %d of %d (refused: %s)" % (count, options.max_identities,
                                                               refused))
    return kept


def main(argv=None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    strategy = STRATEGIES[options.strategy](options)
    ops = ["matmul", "graph"]
    if options.strategy == "vanisher":
        return vanisher.run(options, ops)
    if options.strategy == "sybil":
        pairs = register_sybils(options, ops)
    else:
        count = options.identities or strategy.identities
        addresses = [a for a in options.addresses.split(",") if a] or [""]
        pairs = [volunteer.register(options.node, options.slots, ops, strategy.input_cache_bytes,
                                    strategy.hello_backend, addresses[i % len(addresses)],
                                    options.memory_mb << 20, strategy.protocol)
                 for i in range(count)]
    identities = []
    for index, (ws, welcome) in enumerate(pairs):
        identity = volunteer.Identity(index, ws, welcome, options.slots, strategy)
        identities.append(identity)
        volunteer.say("adversary identity %s" % identity.id)
    assert not [m for m in sys.modules if m == "goblin" or m.startswith("goblin.")]
    for identity in identities:
        identity.thread.start()
    volunteer.wait_forever(identities)
    return 0


if __name__ == "__main__":
    sys.exit(main())
