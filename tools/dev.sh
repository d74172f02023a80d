#!/usr/bin/env bash
# Set up, build, and run ordo on a Debian machine (as root, or with sudo available).
#   tools/dev.sh demo    install what is missing, build, generate text with the bundled model
#   tools/dev.sh test    install what is missing, build, run the whole test suite
#   tools/dev.sh setup   only install the Debian packages
#   tools/dev.sh build   setup + build
# Environment: ORDO_SANITIZE=1 builds with ASan/UBSan (in build-asan/); BUILD_DIR overrides the
# build directory; JOBS the build parallelism (default: all cores).
set -euo pipefail

cd "$(dirname "$0")/.."
PACKAGES=(build-essential cmake pkg-config libdnnl-dev libopenblas-dev libsentencepiece-dev
          nlohmann-json3-dev libcli11-dev libpcre2-dev libicu-dev libgtest-dev libbenchmark-dev)
JOBS=${JOBS:-$(nproc)}
if [[ "${ORDO_SANITIZE:-0}" == 1 ]]; then
  BUILD_DIR=${BUILD_DIR:-build-asan}
  CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DORDO_SANITIZE=ON)
else
  BUILD_DIR=${BUILD_DIR:-build}
  CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release)
fi

setup() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  setup
  cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "${1:-}" in
  setup) setup ;;
  build) build ;;
  demo)
    build
    "$BUILD_DIR/bin/ordo" run -p "Once upon a time" -n 120 --temp 0.8 --seed 42
    ;;
  test)
    build
    # Tests run one at a time on purpose: each forward pass already uses every core.
    ctest --test-dir "$BUILD_DIR" --output-on-failure
    ;;
  *)
    echo "usage: tools/dev.sh demo|test|setup|build" >&2
    exit 2
    ;;
esac
