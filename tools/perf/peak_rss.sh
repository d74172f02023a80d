#!/usr/bin/env bash
# Peak RSS of ordo on a synthetic Llama model against the bytes of its weights, per run dtype.
#
# Usage: tools/perf/peak_rss.sh [ORDO_BINARY] [WORK_DIR] [SHAPE]
#   ORDO_BINARY  default build/bin/ordo
#   WORK_DIR     where the model directories are written (default ordo-peak-rss under XDG_CACHE_HOME or ~/.cache; ~6.6 GB for 1b)
#   SHAPE        1b (default), 110m or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB, as `ordo bench --synthetic`
#
# Two cases, each a fresh process measured by /usr/bin/time -v ("Maximum resident set size"):
#   bench  `ordo bench --synthetic SHAPE --dtype D --backend onednn --quick` (weights built in memory;
#          its peak includes the bench's 64 MiB bandwidth-probe buffer)
#   run    `ordo run -m DIR --ids 1,2,3 -n 4 --temp 0 --dtype D` on the same shape written to disk
#          as model.safetensors, F32 and BF16 (tools/perf/synthetic_dir.py, needs numpy)
# "weights" is the model as the engine holds it: every linear weight in the run dtype (int8: plus
# one F32 scale per row), the embedding and norms in F32. The KV cache of these short runs is a few
# MB. Prints a Markdown table; docs/memory.md has the figures and how to read them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ordo=${1:-build/bin/ordo}
work=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/ordo-peak-rss}
shape=${3:-1b}
python=/usr/bin/python3
[ -x "$python" ] || python=python3

case $shape in
  1b) dim=2048 layers=22 heads=32 kv=4 ffn=5632 vocab=32000 ;;
  110m) dim=768 layers=12 heads=12 kv=12 ffn=2048 vocab=32000 ;;
  *) IFS=, read -r dim layers heads kv ffn vocab <<<"$shape" ;;
esac
hd=$((dim / heads))
# Linear weights (the head included: tied, it is packed as a copy of its own) and their rows.
lin_params=$((layers * (dim * heads * hd + 2 * dim * kv * hd + heads * hd * dim + 3 * dim * ffn) + vocab * dim))
lin_rows=$((layers * (heads * hd + 2 * kv * hd + dim + 2 * ffn + dim) + vocab))
f32_rest=$(((vocab * dim + (2 * layers + 1) * dim) * 4))  # embedding and norms, F32
weights_bytes() {
  case $1 in
    f32) echo $((lin_params * 4 + f32_rest)) ;;
    bf16 | f16) echo $((lin_params * 2 + f32_rest)) ;;
    int8) echo $((lin_params + lin_rows * 4 + f32_rest)) ;;
  esac
}

peak_kb() {  # peak_kb LOG: the "Maximum resident set size" of a /usr/bin/time -v log
  sed -n 's/.*Maximum resident set size (kbytes): *//p' "$1"
}

row() {  # row CASE DTYPE LOG
  local w kb
  w=$(weights_bytes "$2")
  kb=$(peak_kb "$3")
  awk -v c="$1" -v d="$2" -v w="$w" -v kb="$kb" 'BEGIN {
    printf "| %s | %s | %.0f | %.0f | %.2f |\n", c, d, w / 1048576, kb / 1024, kb * 1024 / w }'
}

mkdir -p "$work"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "| case | run dtype | weights (MiB) | peak RSS (MiB) | peak / weights |"
echo "|---|---|---:|---:|---:|"
for dt in f32 bf16 int8; do
  /usr/bin/time -v "$ordo" bench --synthetic "$shape" --dtype "$dt" --backend onednn --quick >/dev/null 2>"$log"
  row "bench --synthetic $shape" "$dt" "$log"
done
for src in f32 bf16; do
  dir=$work/$shape-$src
  [ -f "$dir/model.safetensors" ] || "$python" "$here/synthetic_dir.py" "$dir" --shape "$shape" --dtype "$src" >&2
  for dt in f32 bf16 int8; do
    /usr/bin/time -v "$ordo" run -m "$dir" --ids 1,2,3 -n 4 --temp 0 --dtype "$dt" >/dev/null 2>"$log"
    row "run, $src file" "$dt" "$log"
  done
done
