"""An adversarial volunteer written from docs/protocol.md and docs/ops.md alone.

It must never import the `goblin` package: it has its own tensor frame codec (frame.py), its own
numpy evaluator for the few ops the adversarial tests submit (evaluator.py) and its own volunteer
handshake (volunteer.py). Run it with `python -m adversary --node ws://HOST:PORT --strategy NAME`
from python/tests (or with python/tests on PYTHONPATH); `--help` lists the strategies.
"""
