// The parallel algorithms beyond loops (docs/algorithms.md): sorting (sort.hpp), prefix sums
// (scan.hpp) and parallel_invoke (invoke.hpp). The loops and reductions are in parallel.hpp.
#pragma once

#include "promptly/invoke.hpp"
#include "promptly/parallel.hpp"
#include "promptly/scan.hpp"
#include "promptly/sort.hpp"
