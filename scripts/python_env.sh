#!/usr/bin/env bash
# Makes <repo>/.venv (Debian's python3 with system site packages, so Debian's numpy is used) and
# installs pytest, pytest-xdist (scripts/test.sh runs the suite on two workers) and the goblin
# client (editable) into it. Idempotent: re-running it only
# reinstalls when python/pyproject.toml changed. Safe to run or to source; sourcing leaves nothing
# behind in the calling shell (no variables, no functions) and returns its status.

goblin_python_env() {
    local root venv stamp wanted
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1
    venv="$root/.venv"
    stamp="$venv/.goblin-python-env"
    if [ ! -x "$venv/bin/python" ]; then
        /usr/bin/python3 -m venv --system-site-packages "$venv" || return 1
    fi
    wanted="$(sha256sum "$root/python/pyproject.toml" | cut -d' ' -f1)" || return 1
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] &&
        "$venv/bin/python" -c 'import goblin, pytest, websockets, xdist' 2>/dev/null; then
        return 0
    fi
    # --no-build-isolation builds with the venv's own setuptools: no download beyond the packages.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
        pytest pytest-xdist "websockets>=12" -e "$root/python" || return 1
    echo "$wanted" > "$stamp"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    goblin_python_env
    exit
fi
goblin_python_env || { unset -f goblin_python_env; return 1; }
unset -f goblin_python_env
