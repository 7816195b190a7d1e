// Set-up shared by the oneTBB programs of suite `graph`: --workers N gives a task_arena of N
// slots (the calling thread takes one of them, so N threads run tasks, as Promptly's N
// workers do), with global_control capping TBB's thread pool to the same number. A
// tbb::flow::graph constructed inside arena.execute() attaches to that arena.
#pragma once

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "bench_common.hpp"

namespace bench::graph {

using tbb_node = tbb::flow::continue_node<tbb::flow::continue_msg>;

struct tbb_setup {
    explicit tbb_setup(long workers)
        : limit(tbb::global_control::max_allowed_parallelism, std::size_t(workers)), arena(int(workers)) {}
    tbb::global_control limit;
    tbb::task_arena arena;
};

}  // namespace bench::graph
