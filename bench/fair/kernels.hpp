// The five compute kernels of the fairly prompt paper Sec. 6.2.2 (Fib, UTS, Strassen DMM, BFS, sample sort),
// each runnable in parallel on Promptly and serially, behind one interface (kernels/kernel.hpp).
// Used by kernel_alone.cpp and by the fair suite's programs; see bench/fair/README.md.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bfs.hpp"
#include "kernels/fib.hpp"
#include "kernels/kernel.hpp"
#include "kernels/sort.hpp"
#include "kernels/strassen.hpp"
#include "kernels/uts.hpp"

namespace fair_kernels {

inline std::vector<std::string> kernel_names() { return {"fib", "uts", "strassen", "bfs", "sort"}; }

// Builds kernel `name` at size preset `scale` ("full", "quick", "test") and prepares its input
// (deterministic: fixed seeds). Throws std::invalid_argument on an unknown name or scale.
inline std::unique_ptr<kernel> make_kernel(std::string_view name, std::string_view scale_name) {
    const scale s = parse_scale(scale_name);
    if (name == "fib") return std::make_unique<fib_kernel>(s);
    if (name == "uts") return std::make_unique<uts_kernel>(s);
    if (name == "strassen") return std::make_unique<strassen_kernel>(s);
    if (name == "bfs") return std::make_unique<bfs_kernel>(s);
    if (name == "sort") return std::make_unique<sort_kernel>(s);
    throw std::invalid_argument("unknown kernel '" + std::string(name) + "' (fib, uts, strassen, bfs, sort)");
}

}  // namespace fair_kernels
