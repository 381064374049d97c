#!/usr/bin/env bash
# The tests: install missing packages, build, run the GoogleTest suite through ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
install_missing
build_calisim
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" --timeout 300
