// bench/typed: the program of dynamic.cpp with plain priority levels and
// nothing checked (the "without priorities" column of the futures-and-state paper (PLDI 2020) Table 1).
#define PROMPTLY_BENCH_PLAIN_LEVELS
#include "dynamic.cpp"
