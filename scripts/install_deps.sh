#!/usr/bin/env bash
# Installs the Debian 12 packages GPU Goblin builds and runs with, when any is missing.
# Uses sudo when not root. Idempotent and quiet when everything is already there.
# Usage: scripts/install_deps.sh [--bench|--test]
#   --bench adds what bench/ compares against (Dask, PyTorch); --test adds the tests' references
#   (PyTorch: the op suite and goblin.capture compare with it; the goblin package does not need it),
#   clang-format-14 for the format check, mypy for the Python client's type check (check_types.sh),
#   lintian and python3-build for installer/test-packages.sh, Chromium, its driver, Selenium and
#   aiosmtpd for the access-request browser test, ccache for scripts/test.sh's builds.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config git dpkg-dev
  qt6-base-dev libqt6svg6 libx11-dev libxss-dev
  dbus-daemon xvfb
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libeigen3-dev libopenblas-dev libsqlite3-dev libexpected-dev libssl-dev zlib1g-dev libdeflate-dev
  libcurl4-openssl-dev
  libjs-chart.js
  ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers libclblast-dev pocl-opencl-icd clinfo
  python3 python3-venv python3-pip python3-numpy
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3-distributed iproute2 python3-torch)
fi
if [ "${1:-}" = "--test" ]; then
  packages+=(python3-torch clang-format-14 mypy)
  # installer/test-packages.sh: lintian on the .deb files, python3-build for the wheel.
  packages+=(lintian python3-build)
  # python/tests/test_access_requests.py: a real headless browser and a real SMTP server.
  packages+=(chromium chromium-driver python3-selenium python3-aiosmtpd)
  # goblin.progress draws with tqdm when it is installed (optional for researchers).
  packages+=(python3-tqdm)
  # test_observability reads /metrics with prometheus_client's parser too.
  packages+=(python3-prometheus-client)
  # scripts/test.sh: one compiler cache for its builds (the headless volunteer's tree reuses the
  # ci tree's objects of the libraries).
  packages+=(ccache)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install_deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
