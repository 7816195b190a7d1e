#!/usr/bin/env bash
# Builds a fuzzer with clang++-14, libFuzzer and AddressSanitizer in
# build-fuzz/, and runs it for a bounded time from its committed seed corpus
# (new inputs go to build-fuzz/). Exits non-zero if the fuzzer finds a crash,
# a leak or a sanitizer report (the reproducer is written to build-fuzz/).
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
BUILD=$ROOT/build-fuzz
JOBS=${JOBS:-1}
command -v clang++-14 >/dev/null || { echo "tests/fuzz/run.sh: clang++-14 is missing (./run setup installs it)" >&2; exit 2; }
# Debug with -O1 and no debug info: assertions stay on (they are what a fuzzer
# should trip), and without debug info the build is cheaper.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O1 -DCMAKE_C_FLAGS_DEBUG=-O1 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" \
  -DPROMPTLY_FUZZ=ON -DPROMPTLY_BUILD_TESTS=OFF -DPROMPTLY_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target "$TARGET"
mkdir -p "$BUILD/$SEEDS"
cd "$BUILD"
# detect_stack_use_after_return=0: the runtime's fibers do not support it (src/sched/fiber_stack.cpp).
ASAN_OPTIONS=detect_stack_use_after_return=0 \
  "$BUILD/$BINARY" "$BUILD/$SEEDS" "$ROOT/tests/fuzz/$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
