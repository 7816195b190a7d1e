// Automatic-grain benches of suite `algorithms` on Promptly (grain_workload.hpp): grain 0 is the
// grain-less adaptive form (parallel_reduce / parallel_for(index_range, body) /
// parallel_for(index_box, body)), any other grain the form with that grain (pieces of at most
// grain indices; for blur, tiles of at most grain pixels). Each timed repetition is one
// runtime::run().
#include <promptly/promptly.hpp>

#include <functional>

#include "grain_workload.hpp"
#include "promptly_config.hpp"

int main(int argc, char** argv) {
    bench::args a(argc, argv);
    bench::grain_workload w(a, true);
    const promptly::runtime_config cfg = bench::promptly_config(a);
    long warmup = a.get_long("warmup", 1), reps = a.get_long("reps", 5);
    a.finish();

    promptly::runtime rt{cfg};
    const std::size_t n = w.n;
    auto range = [&](std::size_t grain, auto body) {  // body(index_range): the 1D loops
        if (grain == 0) promptly::parallel_for(promptly::index_range{std::size_t{0}, n}, body);
        else promptly::parallel_for(promptly::index_range{std::size_t{0}, n}, grain, body);
    };
    w.run(warmup, reps, [&](std::size_t grain) -> std::uint64_t {
        return rt.run([&]() -> std::uint64_t {
            if (w.kind == "sum") {
                auto at = [&](std::size_t i) { return w.sum_at(i); };
                if (grain == 0) return promptly::parallel_reduce(std::size_t{0}, n, std::uint64_t{0}, at, std::plus<>{});
                return promptly::parallel_reduce(std::size_t{0}, n, grain, std::uint64_t{0}, at, std::plus<>{});
            }
            if (w.kind == "map") {
                range(grain, [&](auto r) { for (std::size_t i : r) w.map_at(i); });
            } else if (w.kind == "irregular") {
                range(grain, [&](auto r) { for (std::size_t i : r) w.irregular_at(i); });
            } else {
                promptly::index_box box{promptly::index_range{std::size_t{1}, n - 1},
                                        promptly::index_range{std::size_t{1}, n - 1}};
                auto tile = [&](const auto& t) { w.blur_tile(t[0].first(), t[0].last(), t[1].first(), t[1].last()); };
                if (grain == 0) promptly::parallel_for(box, tile);
                else promptly::parallel_for(box, grain, tile);
            }
            return 0;
        });
    });
}
