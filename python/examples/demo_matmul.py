#!/usr/bin/env python3
"""Multiplies two random n×n float32 matrices on a GPU Goblin network and checks the product.

    python demo_matmul.py --node ws://127.0.0.1:7000 --token-file token.txt --n 2048

The product is compared with a float64 numpy reference. Every element must lie within the sound
float32 error bound gamma_K·(|A|·|B|), gamma_K = K·u / (1 - K·u), u = 2^-24; the program exits
with status 1 when one does not (and 2 when the job could not run at all).

Numbers are not encrypted while volunteers compute them: personal or medical data does not belong
on the public network. This demo only sends random numbers.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import goblin
from goblin.accuracy import gamma, matmul_error


def parse_args():
    parser = argparse.ArgumentParser(description="C = A·B on the GPU Goblin network, checked")
    parser.add_argument("--node", required=True, help="lab node address, ws://HOST:PORT")
    parser.add_argument("--token-file", required=True, type=Path,
                        help="file holding your access token")
    parser.add_argument("--n", type=int, default=2048, help="matrix size (default 2048)")
    parser.add_argument("--tile", type=int, nargs=2, metavar=("ROWS", "COLS"),
                        help="C tile size handed to volunteers (node default when omitted)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="give up after this many seconds (default 3600)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.n < 1:
        print("--n must be at least 1", file=sys.stderr)
        return 2
    token = args.token_file.read_text(encoding="utf-8").strip()
    rng = np.random.default_rng(args.seed)
    A = rng.standard_normal((args.n, args.n)).astype(np.float32)
    B = rng.standard_normal((args.n, args.n)).astype(np.float32)

    started = time.monotonic()
    try:
        with goblin.connect(args.node, token=token, timeout=60) as client:
            C = client.matmul(A, B, progress=not args.no_progress, tile=args.tile,
                              timeout=args.timeout)
            summary, job = client.last_summary or {}, client.last_job
    except goblin.GoblinError as exc:
        print("the job did not run: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        return 2
    seconds = time.monotonic() - started

    report = matmul_error(A, B, C)
    correct = report["max_bound_ratio"] <= 1.0
    verdicts = summary.get("verdicts", {})
    print("job            %s" % job)
    print("shape          %d x %d  ·  %d x %d  ->  %d x %d  (float32)"
          % (args.n, args.n, args.n, args.n, C.shape[0], C.shape[1]))
    print("max abs error  %.3e" % report["max_abs_error"])
    print("max error / bound  %.3e  (bound gamma_K·|A||B|, gamma_K = %.3e)"
          % (report["max_bound_ratio"], gamma(args.n, 2.0 ** -24)))
    print("tiles          %s" % summary.get("tiles", "?"))
    print("verdicts       %s accepted, %s rejected"
          % (verdicts.get("accepted", "?"), verdicts.get("rejected", "?")))
    print("volunteers     %s  %s" % (summary.get("volunteers", "?"), summary.get("backends", {})))
    print("node verify    %.2f s CPU, node job time %.2f s"
          % (summary.get("verification_seconds", float("nan")),
             summary.get("seconds", float("nan"))))
    print("time           %.2f s here (upload, compute, download)" % seconds)
    print("result         %s" % ("CORRECT: every element within the bound" if correct
                                 else "WRONG: some element is outside the bound"))
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
