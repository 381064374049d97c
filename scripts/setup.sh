#!/usr/bin/env bash
# Shared set-up for the quick-start scripts: install what is missing (Debian 12, apt-get) and
# build calisim (Release) into build/. Sourced by scripts/flagship.sh and scripts/test.sh.
set -euo pipefail

CALISIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${CALISIM_BUILD_DIR:-$CALISIM_ROOT/build}"

# Why each package is here: see README.md, "Dependencies".
PACKAGES=(cmake ninja-build g++ pkg-config libsqlite3-dev zlib1g-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin
          python3-dev pybind11-dev python3-pytest)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "calisim: installing ${missing[*]}"
    local SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || { echo "calisim: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
      SUDO=sudo
    fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

build_calisim() {
  cmake -S "$CALISIM_ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CALISIM_CMAKE_ARGS:-} >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)"
}
