#!/usr/bin/env bash
# Renders calisim's SVG study plots in headless Chromium (Debian's `chromium` package) and checks
# that each becomes a non-blank PNG: the plots must display in a browser with no network.
# Usage: scripts/check_svg_render.sh [BUILD_DIR]   (default build/). Installs chromium if missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
CALISIM="$BUILD/cli/calisim"
[ -x "$CALISIM" ] || { echo "no calisim binary at $CALISIM (build first: bash scripts/test.sh)" >&2; exit 1; }
if ! command -v chromium >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
"$CALISIM" sweep scale --model llama3-8b --systems a100-sxm-80g,h100-sxm --gpus 8..64 \
  --global-batch-size 64 --seq-len 4096 --svg "$OUT/scale" >/dev/null
"$CALISIM" sweep hardware --model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 32 \
  --seq-len 4096 --vary peak_bf16=0.5x..2x --points 3 --svg "$OUT/hardware.svg" >/dev/null
status=0
for svg in "$OUT/scale.svg" "$OUT/scale_time.svg" "$OUT/hardware.svg"; do
  png="${svg%.svg}.png"
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=780,460 \
    --screenshot="$png" "file://$svg" >/dev/null 2>&1
  # A rendered chart has many distinct colours; a blank or error page has one or two.
  colours=$(python3 -c "
import sys, zlib, struct
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat, w, h = 8, b'', 0, 0
while pos < len(data):
    n, t = struct.unpack('>I4s', data[pos:pos+8]); body = data[pos+8:pos+8+n]; pos += 12 + n
    if t == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if t == b'IDAT': idat += body
raw = zlib.decompress(idat)
print(len(set(raw[i:i+3] for i in range(1, min(len(raw), 400000), 7))))
" "$png" 2>/dev/null || echo 0)
  if [ "${colours:-0}" -ge 8 ]; then
    echo "ok: $(basename "$svg") rendered ($colours sampled colours)"
  else
    echo "FAILED: $(basename "$svg") did not render" >&2
    status=1
  fi
done
exit $status
