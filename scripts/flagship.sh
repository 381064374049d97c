#!/usr/bin/env bash
# The main job: install missing packages, build, and simulate Llama-3-70B on 64 H100 SXM
# (tp 8, pp 4, interleaved vpp 5, dp 2, seq 8192, global batch 128), with the step-time errors of
# the published runs of its class (--accuracy). Extra arguments go to `calisim simulate` (for
# example --json or --trace trace.json).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
install_missing
build_calisim
"$BUILD_DIR/cli/calisim" simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --accuracy "$@"
