#!/usr/bin/env bash
# Renders ordo's reports in headless Chromium to the screenshots in docs/reports/ (docs/reports.md):
# the compare HTML (its summary and a chart section) and the ppl plot (the SVG in Chromium, the PNG
# as ordo's cairo writes it). Chromium is a tool for these docs only: apt-get install chromium.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ordo=${ORDO:-$root/build/bin/ordo}
out=$root/docs/reports
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

"$ordo" compare --quick --zoo "$root/models/zoo" --html "$tmp/compare.html" >/dev/null
"$ordo" ppl -m "$root/models/stories260K" --text "$root/models/zoo/heldout.txt" --ctx 128,256,512,1024,2048 \
  --scaling model,none,linear,ntk,yarn --plot "$tmp/ppl.svg" >/dev/null
"$ordo" ppl -m "$root/models/stories260K" --text "$root/models/zoo/heldout.txt" --ctx 128,256,512,1024,2048 \
  --scaling model,none,linear,ntk,yarn --plot "$out/ppl-cairo.png" >/dev/null

shot() {  # shot URL WIDTH HEIGHT FILE
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$2,$3" \
    --screenshot="$4" "$1" >/dev/null 2>&1
}
shot "file://$tmp/compare.html" 1000 1500 "$out/compare.png"
# A chart section: the length section alone (the page's style, from its anchor to the next).
python3 - "$tmp/compare.html" "$tmp/length.html" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
head = page[: page.index("<body>") + len("<body>")]
part = page[page.index('<a id="length">') : page.index('<a id="attention">')]
open(sys.argv[2], "w", encoding="utf-8").write(head + part + "</body></html>")
PY
shot "file://$tmp/length.html" 1000 1400 "$out/compare-length.png"
printf '<body style="margin:0">%s</body>' "$(cat "$tmp/ppl.svg")" >"$tmp/ppl.html"
shot "file://$tmp/ppl.html" 720 470 "$out/ppl.png"
ls -l "$out"
