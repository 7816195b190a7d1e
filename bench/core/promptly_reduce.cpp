// The reduce benches (reduce_workload.hpp) on Promptly: promptly::parallel_reduce over
// [0, n) with --grain, map = the element, combine = +, identity 0. Each timed repetition is
// one runtime::run().
#include <promptly/promptly.hpp>

#include <functional>

#include "promptly_config.hpp"
#include "reduce_workload.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::reduction w(a);
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    promptly::runtime rt{cfg};
    auto [answer, stats] = bench::measure(warmup, reps, [&] {
        std::size_t n = w.n;
        bench::opaque(n);
        return rt.run([&] {
            if (w.kind == "sum")
                return promptly::parallel_reduce(std::size_t{0}, n, w.grain, std::uint64_t{0},
                                                 [&](std::size_t i) { return w.element_sum(i); }, std::plus<>{});
            return promptly::parallel_reduce(std::size_t{0}, n, w.grain, std::uint64_t{0},
                                             [&](std::size_t i) { return w.element_map(i); }, std::plus<>{});
        });
    });
    bench::print_result(std::to_string(answer), stats);
}
