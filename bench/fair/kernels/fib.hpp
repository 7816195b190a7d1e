// Fib (the fairly prompt paper Sec. 6.2.2): the naive recursive Fibonacci, "many parallel tasks quickly with
// little to no allocation": computation-intensive and predictable. Every call with n >= cutoff
// forks its two branches; below the cutoff plain recursion. Full scale is fib(46) (the fairly prompt paper: 45).
// Strands: a leaf fib(cutoff - 1) is ~20k calls, ~15 us here, the longest serial stretch
// between two strand boundaries.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "exec.hpp"
#include "kernel.hpp"

namespace fair_kernels {

class fib_kernel final : public kernel {
public:
    explicit fib_kernel(scale s) : n_(pick(s, 30, 41, 46)) {}

    std::string_view name() const noexcept override { return "fib"; }
    std::uint64_t run() override { return fib<par>(n_); }
    std::uint64_t run_serial() override {
        std::uint64_t r = fib<seq>(n_);
        if (r != closed_form(n_))  // independent check of the reference
            throw std::logic_error("fib: serial result " + std::to_string(r) + " is wrong");
        return r;
    }

private:
    static constexpr int cutoff = 21;

    static std::uint64_t plain(int n) { return n < 2 ? std::uint64_t(n) : plain(n - 1) + plain(n - 2); }

    template <class E>
    static std::uint64_t fib(int n) {
        if (n < cutoff) return plain(n);
        auto [a, b] = E::join([n] { return fib<E>(n - 1); }, [n] { return fib<E>(n - 2); });
        return a + b;
    }

    static std::uint64_t closed_form(int n) {  // iterative
        std::uint64_t a = 0, b = 1;
        for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
        return a;
    }

    int n_;
};

}  // namespace fair_kernels
