#!/usr/bin/env bash
# Runs the README's two commands the way a new user would: each on its own fresh Debian bookworm
# root (debootstrap --variant=minbase, nothing else installed), in a clean clone of this
# repository's HEAD (commit first: uncommitted changes are not in it), under chroot, as root.
# Every output line is stamped with the seconds since its command started.
#
#   tools/fresh-machine.sh [demo|test|both]     (default: both; needs root and a Debian mirror)
#
# Environment: WORK (default ordo-fresh under XDG_CACHE_HOME or ~/.cache) holds the roots; the
# base root is built once and copied for every command (FRESH_BASE=1 rebuilds it). MIRROR
# (default http://deb.debian.org/debian).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/ordo-fresh}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
WHICH=${1:-both}

fail() {
  echo "fresh-machine: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || fail "run as root (debootstrap and chroot need it)"
case "$WHICH" in demo | test | both) ;; *) fail "usage: tools/fresh-machine.sh [demo|test|both]" ;; esac
for cmd in demo test; do
  grep -qx "bash tools/dev.sh $cmd .*" "$REPO/README.md" ||
    fail "README.md no longer starts with 'bash tools/dev.sh $cmd': update this script with it"
done
if ! command -v debootstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

base="$WORK/base"
if [[ ${FRESH_BASE:-0} == 1 || ! -f "$base/.complete" ]]; then
  rm -rf "$base"
  mkdir -p "$WORK"
  echo "== debootstrap $SUITE (minbase) into $base"
  debootstrap --variant=minbase "$SUITE" "$base" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    fail "debootstrap failed; see $WORK/debootstrap.log"
  cat >"$base/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian}/debian-security $SUITE-security main
EOF
  touch "$base/.complete"
fi

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

# Prefixes every line with the seconds since `start`.
stamp() {
  local start=$1 line
  while IFS= read -r line; do printf '[%4ds] %s\n' $(($(date +%s) - start)) "$line"; done
}

run_fresh() {
  local cmd=$1 root="$WORK/root-$1"
  # Never rm -rf through a bind mount of the host's /dev, /sys or /proc left by a killed run.
  if awk -v r="$root/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    fail "$root still has mounts from an earlier run: umount -R them first"
  fi
  rm -rf "$root"
  cp -a "$base" "$root"
  git clone -q "$REPO" "$root/ordo"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  for m in proc sys dev; do
    mount --rbind "/$m" "$root/$m"
    mount --make-rslave "$root/$m"  # unmounting it must not reach the host's own mounts
    mounted+=("$root/$m")
  done
  echo "== $cmd: bash tools/dev.sh $cmd, fresh $SUITE root, clone of $(git -C "$REPO" rev-parse --short HEAD)"
  local start rc=0
  start=$(date +%s)
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /ordo && bash tools/dev.sh $cmd" 2>&1 | stamp "$start" | tee "$WORK/$cmd.log" || rc=$?
  echo "== $cmd: exit $rc after $(($(date +%s) - start)) s (log: $WORK/$cmd.log)"
  cleanup
  mounted=()
  return "$rc"
}

status=0
[[ $WHICH == test ]] || run_fresh demo || status=1
[[ $WHICH == demo ]] || run_fresh test || status=1
exit $status
