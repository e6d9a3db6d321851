#!/usr/bin/env bash
# Installs the real model code the tests run (python/tests/requirements-real-models.txt:
# torchvision and Hugging Face transformers, pinned) into <repo>/.venv, which
# scripts/python_env.sh makes. Idempotent: re-running it only reinstalls when the list changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
list="$root/python/tests/requirements-real-models.txt"
stamp="$venv/.goblin-real-models"
[ -x "$venv/bin/python" ] || bash "$root/scripts/python_env.sh"
wanted="$(sha256sum "$list" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] &&
    "$venv/bin/python" -c 'import torchvision, transformers' 2>/dev/null; then
  exit 0
fi
# --no-deps: the pins are the whole set; pip would otherwise replace Debian's PyTorch.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$list"
"$venv/bin/python" -W ignore -c 'import torchvision, transformers' # fails loudly if incomplete
echo "$wanted" > "$stamp"
