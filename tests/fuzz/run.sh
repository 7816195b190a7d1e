#!/usr/bin/env bash
# Builds the protocol fuzzer (tests/fuzz/fuzz_protocol.cpp) with clang++-14,
# libFuzzer and AddressSanitizer in build-fuzz/, and runs it for a bounded
# time from the committed seed corpus (tests/fuzz/corpus/; new inputs go to
# build-fuzz/corpus/). Exits non-zero if the fuzzer finds a crash, a leak or
# a sanitizer report (the reproducer is written to build-fuzz/).
#
#   tests/fuzz/run.sh [SECONDS]      default 60
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECONDS_TO_RUN=${1:-60}
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
cmake --build "$BUILD" -j "$JOBS" --target fuzz_protocol
mkdir -p "$BUILD/corpus"
cd "$BUILD"
# detect_stack_use_after_return=0: the runtime's fibers do not support it (src/sched/fiber_stack.cpp).
ASAN_OPTIONS=detect_stack_use_after_return=0 \
  "$BUILD/tools/fuzz_protocol" "$BUILD/corpus" "$ROOT/tests/fuzz/corpus" \
  -max_total_time="$SECONDS_TO_RUN" -max_len=16384 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
