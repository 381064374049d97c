#!/usr/bin/env bash
# Renders calisim's SVG output in headless Chromium (Debian's `chromium` package) with no network
# and checks each screenshot: the study plots of `calisim sweep` must become non-blank PNGs, and
# the HTML report of `calisim validate --report` must show its plots (the scatter of simulated
# against measured runs and the error histogram, whose blue marks are counted in the screenshot).
# Usage: scripts/check_svg_render.sh [--no-install] [BUILD_DIR]   (default build/)
# Installs chromium if missing; with --no-install (the ctest entry) exits 77, "skipped", instead.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INSTALL=1
if [ "${1:-}" = "--no-install" ]; then INSTALL=0; shift; fi
BUILD="${1:-$ROOT/build}"
CALISIM="$BUILD/cli/calisim"
[ -x "$CALISIM" ] || { echo "no calisim binary at $CALISIM (build first: bash scripts/test.sh)" >&2; exit 1; }
if ! command -v chromium >/dev/null; then
  if [ "$INSTALL" -eq 0 ]; then
    echo "skipped: chromium is not installed (apt-get install chromium, or run this script without --no-install)"
    exit 77
  fi
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$CALISIM" sweep scale --model llama3-8b --systems a100-sxm-80g,h100-sxm --gpus 8..64 \
  --global-batch-size 64 --seq-len 4096 --svg "$OUT/scale" >/dev/null
"$CALISIM" sweep hardware --model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 32 \
  --seq-len 4096 --vary peak_bf16=0.5x..2x --points 3 --svg "$OUT/hardware.svg" >/dev/null
"$CALISIM" validate --runs "$ROOT/calibration/data/measured_runs.csv" --report "$OUT/validate.html" >/dev/null

# shot FILE WIDTH HEIGHT: screenshot of FILE in a WIDTHxHEIGHT window, to FILE's name .png.
shot() {
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$2,$3" \
    --screenshot="${1%.*}.png" "file://$1" >/dev/null 2>&1
}
status=0
for svg in "$OUT/scale.svg" "$OUT/scale_time.svg" "$OUT/hardware.svg"; do
  shot "$svg" 780 460
  # A rendered chart has many distinct colours; a blank or error page has one or two.
  if counts=$(python3 "$ROOT/scripts/png_check.py" "${svg%.svg}.png" --min-colours 8); then
    echo "ok: $(basename "$svg") rendered (${counts% *} colours)"
  else
    echo "FAILED: $(basename "$svg") did not render (${counts:-no screenshot})" >&2
    status=1
  fi
done
# The report's plots draw their marks in #2766c4: one point per simulated run (194 in the public
# file) in the scatter, the bars of the error histogram. A page whose SVG did not render shows
# text and tables only, without those pixels (0 in such a screenshot, about 26,000 rendered).
shot "$OUT/validate.html" 1000 1500
if counts=$(python3 "$ROOT/scripts/png_check.py" "$OUT/validate.png" --min-colours 8 --colour 2766c4 \
            --min-pixels 1000); then
  echo "ok: validate.html rendered (${counts#* } pixels of its plots' marks)"
else
  echo "FAILED: validate.html did not render its plots (colours, mark pixels: ${counts:-no screenshot})" >&2
  status=1
fi
exit $status
