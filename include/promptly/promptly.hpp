// Promptly: a C++20 runtime for responsive parallel programs.
// Include this header for the whole public API.
#pragma once

#include "promptly/algorithm.hpp"
#include "promptly/config.hpp"
#include "promptly/default_runtime.hpp"
#include "promptly/errors.hpp"
#include "promptly/fork_join.hpp"
#include "promptly/future.hpp"
#include "promptly/graph.hpp"
#include "promptly/index_range.hpp"
#include "promptly/level.hpp"
#include "promptly/nothing.hpp"
#include "promptly/parallel.hpp"
#include "promptly/pool.hpp"
#include "promptly/promise.hpp"
#include "promptly/runtime.hpp"
#include "promptly/stats.hpp"
#include "promptly/task_group.hpp"
#include "promptly/this_task.hpp"
#include "promptly/version.hpp"
