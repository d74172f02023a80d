#!/usr/bin/env bash
# Set up, build and run ordo on a Debian machine (as root, or with sudo).
#   tools/dev.sh demo    install what is missing, build the ordo CLI, generate text with the bundled model,
#                        then say where `ordo` is and how to put it on PATH
#   tools/dev.sh install build the ordo CLI and install it with the bundled models: PREFIX/bin/ordo,
#                        PREFIX/share/ordo/models (PREFIX default /usr/local; the library and headers too)
#   tools/dev.sh test    install what is missing, build everything (the Python module too), run the whole
#                        test suite: the C++ tests, then the Python module's pytest suite (python/tests)
#   tools/dev.sh setup   only install (and check) the Debian packages
#   tools/dev.sh build   setup, then build everything
#   tools/dev.sh fuzz [SECONDS]  build the libFuzzer fuzzers (clang, ASan + UBSan) in build-fuzz/
#                        and run each for SECONDS (default 30), two at a time; fails on any crash,
#                        leak or timeout. With CI=true, `test` runs the fuzzers of its ASan build too
#                        (ORDO_FUZZ_SECONDS, default 20).
#   tools/dev.sh format  rewrite every C++ source in place with clang-format (.clang-format)
#   tools/dev.sh lint    check, without changing anything: clang-format over the C++ sources, pyflakes over
#                        the Python files, shellcheck over the shell scripts, and the subject (at most 72
#                        characters) and body of every commit since the base in .ci/commit-rules-base
# With CI=true, `test` runs lint first, then the suite, then the ASan/UBSan suite and the fuzzers in
# build-asan/ (ORDO_CI_SANITIZERS="address thread": also the TSan threading tests in build-tsan/);
# any failure fails the run.
# Environment: ORDO_SANITIZE=1 (or address) builds with ASan/UBSan (clang) in build-asan/, ORDO_SANITIZE=thread
# with TSan in build-tsan/; BUILD_DIR overrides the build directory; JOBS the build parallelism
# (default: all cores); PREFIX the install prefix of `install` (default /usr/local).
set -euo pipefail

cd "$(dirname "$0")/.."
PACKAGE_TABLE=cmake/debian-packages.txt
JOBS=${JOBS:-$(nproc)}
# The ASan/UBSan configuration (ORDO_SANITIZE=1 or address).
asan_build() { [[ ${ORDO_SANITIZE:-0} == 1 || ${ORDO_SANITIZE:-0} == address ]]; }
case "${ORDO_SANITIZE:-0}" in
  0 | "") BUILD_DIR=${BUILD_DIR:-build}; CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DORDO_PYTHON=ON) ;;
  # ASan + UBSan with clang (CC/CXX override it): GCC takes twice as long to build this configuration
  # (98 s against 45 s for one heavy test file), which CI's time limit cannot afford. The fuzzers
  # are built in it too (ORDO_FUZZ), so CI's short fuzz run needs no build of its own.
  1 | address) BUILD_DIR=${BUILD_DIR:-build-asan}
    CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DORDO_SANITIZE=address -DORDO_FUZZ=ON
      "-DCMAKE_C_COMPILER=${CC:-clang}" "-DCMAKE_CXX_COMPILER=${CXX:-clang++}") ;;
  thread) BUILD_DIR=${BUILD_DIR:-build-tsan}; CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DORDO_SANITIZE=thread) ;;
  *) echo "tools/dev.sh: ORDO_SANITIZE must be 1, address or thread, not '$ORDO_SANITIZE'" >&2; exit 2 ;;
esac
asan_build &&
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

fail() {
  echo "tools/dev.sh: $*" >&2
  exit 1
}

# "pkg<TAB>find step" for every package of the table; `demo` (SKIP_STEPS="libFuzzer lint") leaves out
# the fuzz build's toolchain and the linters, which it does not run; ONLY_STEP=lint keeps only that step.
table() {
  awk -v skip="${SKIP_STEPS:-}" -v only="${ONLY_STEP:-}" '
    BEGIN { n = split(skip, s, " "); for (i = 1; i <= n; i++) skipped[s[i]] = 1 }
    !/^#/ && NF && !($1 in skipped) && (only == "" || $1 == only) { for (i = 2; i <= NF; i++) print $i "\t" $1 }
  ' "$PACKAGE_TABLE"
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

setup() {
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    fail "this script installs Debian packages with apt-get; on another system install the packages of $PACKAGE_TABLE by hand"
  fi
  local missing=() pkg step
  while IFS=$'\t' read -r pkg step; do
    installed "$pkg" || missing+=("$pkg")
  done < <(table)
  if [[ ${#missing[@]} -gt 0 ]]; then
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq || fail "apt-get update failed: is a Debian package mirror reachable?"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
      fail "apt-get install failed for: ${missing[*]}"
  fi
  local absent=()
  while IFS=$'\t' read -r pkg step; do
    installed "$pkg" || absent+=("$pkg (for $step)")
  done < <(table)
  [[ ${#absent[@]} -eq 0 ]] || fail "still not installed after apt-get: ${absent[*]}"
}

configure() {
  setup
  cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
}

# The fuzzers of tests/fuzz/CMakeLists.txt, each run for $1 seconds on a working copy of its
# committed seed corpus (new inputs stay in the build directory, crashes go to its artifacts/). $2:
# the build directory, by default build-fuzz/ (configured here, coverage everywhere); CI passes the
# ASan build, configured by `test`, whose coverage covers the parsers and the CLI.
fuzz() {
  local seconds=${1:-30} dir=${2:-build-fuzz}
  setup
  if [[ $dir == build-fuzz ]]; then
    CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORDO_FUZZ=ON >/dev/null
  fi
  local targets=()
  read -ra targets <<<"$(sed -n '/^set(ORDO_FUZZ_TARGETS/,/)/p' tests/fuzz/CMakeLists.txt | tr -d '()' |
    sed 's/^setORDO_FUZZ_TARGETS//' | tr '\n' ' ')"
  cmake --build "$dir" -j "$JOBS" --target "${targets[@]/#/fuzz_}"
  mkdir -p "$dir/logs"
  local failed=0 t
  for t in "${targets[@]}"; do
    mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
    cp -n tests/fuzz/corpus/"$t"/* "$dir/corpus/$t/"
  done
  # Two at a time (two cores); each one's log is printed if it fails.
  printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} sh -c \
    "'$dir/fuzz/fuzz_{}' -max_total_time=$seconds -timeout=60 -rss_limit_mb=4096 -max_len=65536 \
       -artifact_prefix='$dir/artifacts/{}/' '$dir/corpus/{}' >'$dir/logs/{}.log' 2>&1 \
     && echo 'fuzz {}: ok' \$(grep -o 'Done [0-9]* runs in [0-9]* second(s)' '$dir/logs/{}.log') \
     || { echo 'fuzz {}: FAILED'; tail -n 60 '$dir/logs/{}.log'; exit 1; }" || failed=1
  [[ $failed -eq 0 ]] || fail "a fuzzer failed: the input is under $dir/artifacts/ (add it to tests/data/fuzz-regressions/)"
}

# The project's files whose path matches the extended regex $1, one per line: the git checkout's
# tracked and new files (a tree without git: every file outside build*/), never tests/data/.
files_matching() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard
  else
    find . -path './build*' -prune -o -type f -print | sed 's|^\./||'
  fi | grep -E "$1" | grep -v '^tests/data/' | sort -u | while IFS= read -r f; do if [[ -f $f ]]; then echo "$f"; fi; done
}
cxx_sources() { files_matching '^(engine|models|tokenizer|tools|tests|python|examples)/.*\.(cpp|hpp|cc|h|c)$'; }
python_files() { files_matching '^(tools|tests|python|examples)/.*\.py$'; }
# Shell scripts: *.sh, and any other file that starts with a sh or bash shebang (.ci/run).
shell_scripts() {
  local f
  files_matching '.' | while IFS= read -r f; do
    if [[ $f == *.sh ]] || head -n 1 "$f" 2>/dev/null | grep -qE '^#!.*[/ ](ba)?sh$'; then echo "$f"; fi
  done
}

format() {
  ONLY_STEP=lint setup
  cxx_sources | xargs -r -d '\n' clang-format -i
  echo "formatted $(cxx_sources | wc -l) C++ sources" >&2
}

# Commits after the one named in .ci/commit-rules-base (the commit CONTRIBUTING.md's rules started
# from; older subjects are long): subject at most 72 characters, a body. Merges are left out.
commit_messages() {
  local base
  base=$(sed -n '/^[0-9a-f]\{7,40\}$/p' .ci/commit-rules-base 2>/dev/null | head -n 1)
  if [[ -z $base ]] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
    echo "lint: commit messages not checked (no git history back to .ci/commit-rules-base)" >&2
    return 0
  fi
  local bad=0 c subject
  for c in $(git rev-list --no-merges "$base..HEAD"); do
    subject=$(git log -1 --format=%s "$c")
    if [[ ${#subject} -gt 72 ]]; then
      echo "commit ${c:0:10}: subject is ${#subject} characters (at most 72): $subject" >&2
      bad=1
    fi
    if [[ -z $(git log -1 --format=%b "$c" | tr -d '[:space:]') ]]; then
      echo "commit ${c:0:10}: no body saying why: $subject" >&2
      bad=1
    fi
  done
  return $bad
}

lint() {
  ONLY_STEP=lint setup
  local failed=()
  # One line per file that differs (--ferror-limit=1): the whole diff is what `format` would write.
  cxx_sources | xargs -r -d '\n' clang-format --dry-run -Werror --ferror-limit=1 ||
    failed+=("clang-format (tools/dev.sh format rewrites the sources)")
  python_files | xargs -r -d '\n' pyflakes3 || failed+=(pyflakes)
  shell_scripts | xargs -r -d '\n' shellcheck || failed+=(shellcheck)
  python3 tools/check_layout.py || failed+=("layout (CONTRIBUTING.md: job lines, file and function lengths)")
  commit_messages || failed+=("commit messages (CONTRIBUTING.md)")
  [[ ${#failed[@]} -eq 0 ]] || fail "lint failed: ${failed[*]}"
  echo "lint: ok ($(cxx_sources | wc -l) C++ sources, $(python_files | wc -l) Python files, $(shell_scripts | wc -l) shell scripts)" >&2
}

case "${1:-}" in
  setup) setup ;;
  fuzz) fuzz "${2:-30}" ;;
  format) format ;;
  lint) lint ;;
  build)
    configure
    cmake --build "$BUILD_DIR" -j "$JOBS"
    ;;
  demo)
    SKIP_STEPS="libFuzzer lint" configure
    cmake --build "$BUILD_DIR" -j "$JOBS" --target ordo_cli
    "$BUILD_DIR/bin/ordo" run -p "Once upon a time" -n 120 --temp 0.8 --seed 42
    ordo_bin=$(cd "$BUILD_DIR/bin" && pwd)/ordo
    echo >&2
    echo "ordo is built at $ordo_bin" >&2
    echo "put it on PATH: bash tools/dev.sh install   (to /usr/local; PREFIX=DIR for another prefix)" >&2
    echo "            or: export PATH=\"$(dirname "$ordo_bin"):\$PATH\"   (this shell only)" >&2
    ;;
  install)
    SKIP_STEPS="libFuzzer lint" configure
    # The CLI, its models and the C++ library; the Python module (component python) installs with
    # pip from python/, so only the default component is installed here.
    cmake --build "$BUILD_DIR" -j "$JOBS" --target ordo_cli
    prefix=${PREFIX:-/usr/local}
    sudo=""
    if [[ $(id -u) -ne 0 ]] && ! { mkdir -p "$prefix" 2>/dev/null && [[ -w $prefix ]]; }; then sudo="sudo"; fi
    $sudo cmake --install "$BUILD_DIR" --prefix "$prefix" --component Unspecified >/dev/null ||
      fail "cmake --install to $prefix failed"
    echo "installed $prefix/bin/ordo (models under $prefix/share/ordo/models)" >&2
    case ":$PATH:" in
      *":$prefix/bin:"*) echo "ordo is on PATH: try  ordo run -p \"Once upon a time\"" >&2 ;;
      *) echo "$prefix/bin is not on PATH: export PATH=\"$prefix/bin:\$PATH\"" >&2 ;;
    esac
    ;;
  test)
    # CI: the style checks first, so a formatting slip fails in seconds rather than after the build.
    if [[ ${CI:-} == true && ${ORDO_SANITIZE:-0} == 0 ]]; then lint; fi
    configure
    cmake --build "$BUILD_DIR" -j "$JOBS"
    TESTS=()
    # A TSan build runs every call on its caller's thread (ThreadSanitizer cannot see inside
    # Debian's libgomp), so it checks what the API promises: threads sharing one model, batches,
    # and every fixture family. The thread-pool tests need a pool and run in the other builds.
    [[ ${ORDO_SANITIZE:-0} == thread ]] && TESTS=(-R 'Shared|Batch|Fixture|Generate|KvCache|Zoo')
    if asan_build; then
      # ASan + UBSan: the GoogleTest suite in one process (a sanitized process takes ~0.3 s to start,
      # 11 min over the suite's 2,200 tests; the plain build runs each test alone), then `ordo
      # serve`'s suite. Left out, as they add no code under the sanitizer, only time: the docs'
      # commands (the CLI tests run the same paths), the ISA-capped reruns of the kernel suites, the
      # find_package consumer, the Slurm test (its job array runs the same `ordo sweep run` the
      # sweep tests do), and three runs of `compare --quick` over the whole zoo (3-4 min each here)
      # whose merge, shard and report code lighter tests reach (SweepShards.PplShardsMerge*,
      # SweepCli.PplMerged*, CompareCli.QuickRunJsonAndHtmlAgreeOnEveryNumber).
      skipped=SweepCli.CompareQuickMergedEqualsOneProcessRun:SweepShards.CompareQuickShardsMergeEqualOneProcessRun
      skipped+=:ReportHtml.SummaryColoursErrorBarsPrecisionAxesAndTests
      (cd "$BUILD_DIR/tests" && timeout 3600 ./ordo_tests --gtest_brief=1 "--gtest_filter=-$skipped") ||
        fail "the ASan/UBSan suite failed (ordo_tests in $BUILD_DIR/tests; a hang stops it after an hour)"
      ctest --test-dir "$BUILD_DIR" --output-on-failure -L serve
    else
      # Tests run one at a time on purpose: each forward pass already uses every core.
      ctest --test-dir "$BUILD_DIR" --output-on-failure "${TESTS[@]}"
    fi
    # The Python module's suite (python/tests) against this build, with Debian's interpreter (the
    # one the module was built for). Sanitizer builds leave the module out (the interpreter would
    # need the sanitizer runtime preloaded).
    if [[ ${ORDO_SANITIZE:-0} == 0 ]]; then
      ORDO_BUILD_DIR="$BUILD_DIR" /usr/bin/python3 -m pytest -q -p no:cacheprovider python/tests
    fi
    # CI: the sanitizer suites of ORDO_CI_SANITIZERS (default "address"; "address thread" adds the
    # TSan threading tests), each in its own build directory (BUILD_DIR names the main one only);
    # after the ASan suite, every fuzzer of that build for a bounded time (~2.7 min for 15 fuzzers
    # x 20 s two at a time). Any failure fails CI.
    if [[ ${CI:-} == true ]] && asan_build; then
      fuzz "${ORDO_FUZZ_SECONDS:-20}" "$BUILD_DIR"
    fi
    if [[ ${CI:-} == true && ${ORDO_SANITIZE:-0} == 0 ]]; then
      read -ra sanitizers <<<"${ORDO_CI_SANITIZERS-address}"
      for sanitizer in "${sanitizers[@]}"; do
        env -u BUILD_DIR ORDO_SANITIZE="$sanitizer" bash tools/dev.sh test
      done
    fi
    ;;
  *)
    echo "usage: tools/dev.sh demo|install|test|setup|build|fuzz [seconds]|format|lint" >&2
    exit 2
    ;;
esac
