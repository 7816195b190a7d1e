#!/usr/bin/env bash
# Builds a fuzzer with clang++-14, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/ (or in the build directory
# PROMPTLY_FUZZ_BUILD names, if it is configured with PROMPTLY_FUZZ=ON: ./run
# test passes its build-asan/), and runs it for a bounded time from its
# committed seed corpus (new inputs go to the build directory). Exits non-zero
# if the fuzzer finds a crash, a leak or a sanitizer report (the reproducer is
# written to the build directory).
#   protocol  promptlyd's request parser and dispatcher (tests/fuzz/fuzz_protocol.cpp,
#             seeds tests/fuzz/corpus/)
#   apps      the email server's request lines and the proxy's HTTP stream
#             (tests/fuzz/fuzz_apps.cpp, seeds tests/fuzz/corpus-apps/)
#
#   tests/fuzz/run.sh [SECONDS [protocol|apps]]      default 60 protocol
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECONDS_TO_RUN=${1:-60}
WHICH=${2:-protocol}
case "$WHICH" in
  protocol) TARGET=fuzz_protocol BINARY=tools/fuzz_protocol SEEDS=corpus MAX_LEN=16384 ;;
  apps) TARGET=fuzz_apps BINARY=apps/fuzz_apps SEEDS=corpus-apps MAX_LEN=8192 ;;
  *) echo "tests/fuzz/run.sh: unknown fuzzer '$WHICH' (protocol or apps)" >&2; exit 2 ;;
esac
BUILD=$(realpath -m "${PROMPTLY_FUZZ_BUILD:-$ROOT/build-fuzz}")
JOBS=${JOBS:-1}
command -v clang++-14 >/dev/null || { echo "tests/fuzz/run.sh: clang++-14 is missing (./run setup installs it)" >&2; exit 2; }
# The AddressSanitizer build (Debug, -O1, assertions on: they are what a fuzzer
# should trip) with the fuzz targets; a directory already configured that way
# (./run test's build-asan/) is only brought up to date.
if ! grep -q '^PROMPTLY_FUZZ:BOOL=ON$' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DPROMPTLY_ASAN=ON \
    -DPROMPTLY_FUZZ=ON -DPROMPTLY_BUILD_TESTS=OFF -DPROMPTLY_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" -j "$JOBS" --target "$TARGET"
mkdir -p "$BUILD/$SEEDS"
cd "$BUILD"
# detect_stack_use_after_return=0: the runtime's fibers do not support it (src/sched/fiber_stack.cpp).
ASAN_OPTIONS=detect_stack_use_after_return=0 UBSAN_OPTIONS=print_stacktrace=1 \
  "$BUILD/$BINARY" "$BUILD/$SEEDS" "$ROOT/tests/fuzz/$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
