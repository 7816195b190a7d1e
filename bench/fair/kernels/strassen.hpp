// DMM (the fairly prompt paper Sec. 6.2.2): dense matrix multiplication C = A B by Strassen's recursive
// algorithm, parallel over its 7 half-size products, classic multiplication at n <= `cutoff`.
// Sizes are 2^k times a small odd factor (full: 2560 = 5 * 2^9, halved down to 40 x 40 leaves;
// the fairly prompt paper's 2048 takes only ~0.65 s on 2 workers here, 4096 ~4.5 s).
// Compute-intensive with a predictable structure. Entries are small integers (-2..2) stored as
// doubles, so every intermediate (at most ~1e6 in magnitude here) is an exact integer: the
// product is exact and identical however it is scheduled, which makes a hash of it a checksum.
// Strands: a classic leaf (<= 64 x 64, ~50 us) or an elementwise pass over <= 8k entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "exec.hpp"
#include "kernel.hpp"

namespace fair_kernels {

class strassen_kernel final : public kernel {
public:
    explicit strassen_kernel(scale s)
        : n_(pick<std::size_t>(s, 256, 1280, 2560)), a_(n_ * n_), b_(n_ * n_), c_(n_ * n_) {
        for (std::size_t i = 0; i < n_ * n_; ++i) {
            a_[i] = double(int(mix(0xA000'0000ull + i) % 5) - 2);
            b_[i] = double(int(mix(0xB000'0000ull + i) % 5) - 2);
        }
    }

    std::string_view name() const noexcept override { return "strassen"; }
    std::uint64_t run() override { return multiply_all<par>(); }
    std::uint64_t run_serial() override {
        std::uint64_t h = multiply_all<seq>();
        if (!std::exchange(checked_, true)) check_freivalds();  // once: timed serial runs only multiply
        return h;
    }

private:
    static constexpr std::size_t cutoff = 64;  // classic multiplication at n <= 64 (or n odd)

    struct view {  // a square block of a row-major matrix: element (i, j) at p[i * stride + j]
        double* p;
        std::size_t stride;
        double* row(std::size_t i) const { return p + i * stride; }
        view quad(std::size_t h, int r, int c) const { return {p + r * h * stride + c * h, stride}; }
    };

    // Rows per strand of an elementwise pass: about 8k entries. Not more: the temporaries are
    // fresh allocations (mmap'ed when large), so a pass also takes their first-touch page faults
    // (~2-4 us per 4 KiB page here); 32k entries made strands of 0.13-0.3 ms.
    static std::size_t grain_rows(std::size_t n) { return n >= 8192 ? 1 : 8192 / n; }

    template <class E>
    std::uint64_t multiply_all() {
        multiply<E>({a_.data(), n_}, {b_.data(), n_}, {c_.data(), n_}, n_);
        return E::template sum<std::uint64_t>(std::size_t{0}, n_, grain_rows(n_), [&](std::size_t i) {
            std::uint64_t h = 0;
            for (std::size_t j = 0; j < n_; ++j)
                h += mix(std::uint64_t(std::int64_t(c_[i * n_ + j])) + i * n_ + j);
            return h;
        });
    }

    static void classic(view a, view b, view c, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            double* __restrict cr = c.row(i);
            for (std::size_t j = 0; j < n; ++j) cr[j] = 0;
            for (std::size_t k = 0; k < n; ++k) {
                const double aik = a.row(i)[k];
                const double* __restrict br = b.row(k);
                for (std::size_t j = 0; j < n; ++j) cr[j] += aik * br[j];
            }
        }
    }

    // out = x + sign * y, all h x h.
    template <class E>
    static void add(view x, view y, double sign, view out, std::size_t h) {
        E::loop(std::size_t{0}, h, grain_rows(h), [=](std::size_t i) {
            const double *xr = x.row(i), *yr = y.row(i);
            double* o = out.row(i);
            for (std::size_t j = 0; j < h; ++j) o[j] = xr[j] + sign * yr[j];
        });
    }

    // An operand of a product: a quadrant, or the sum/difference of two quadrants.
    struct operand {
        view x, y;
        double sign;  // 0: x alone
    };

    template <class E>
    static view materialise(const operand& o, double* tmp, std::size_t h) {
        if (o.sign == 0) return o.x;
        view t{tmp, h};
        add<E>(o.x, o.y, o.sign, t, h);
        return t;
    }

    template <class E>
    static void multiply(view a, view b, view c, std::size_t n) {
        if (n <= cutoff || n % 2 != 0) return classic(a, b, c, n);
        const std::size_t h = n / 2, hh = h * h;
        const view a11 = a.quad(h, 0, 0), a12 = a.quad(h, 0, 1), a21 = a.quad(h, 1, 0), a22 = a.quad(h, 1, 1);
        const view b11 = b.quad(h, 0, 0), b12 = b.quad(h, 0, 1), b21 = b.quad(h, 1, 0), b22 = b.quad(h, 1, 1);
        const operand left[7] = {{a11, a22, 1}, {a21, a22, 1}, {a11, {}, 0}, {a22, {}, 0},
                                 {a11, a12, 1}, {a21, a11, -1}, {a12, a22, -1}};
        const operand right[7] = {{b11, b22, 1}, {b11, {}, 0}, {b12, b22, -1}, {b21, b11, -1},
                                  {b22, {}, 0}, {b11, b12, 1}, {b21, b22, 1}};
        auto m = std::make_unique_for_overwrite<double[]>(7 * hh);  // M1..M7
        E::loop(0, 7, 1, [&](int k) {
            auto tmp = std::make_unique_for_overwrite<double[]>(2 * hh);
            const view l = materialise<E>(left[k], tmp.get(), h), r = materialise<E>(right[k], tmp.get() + hh, h);
            multiply<E>(l, r, {m.get() + k * hh, h}, h);
        });
        const double* mk[7];
        for (int k = 0; k < 7; ++k) mk[k] = m.get() + k * hh;
        E::loop(std::size_t{0}, h, grain_rows(4 * h), [&](std::size_t i) {  // 4 output rows per i
            const std::size_t o = i * h;
            double *c11 = c.row(i), *c12 = c11 + h, *c21 = c.row(h + i), *c22 = c21 + h;
            for (std::size_t j = 0; j < h; ++j) {
                const double m1 = mk[0][o + j], m2 = mk[1][o + j], m3 = mk[2][o + j], m4 = mk[3][o + j],
                             m5 = mk[4][o + j], m6 = mk[5][o + j], m7 = mk[6][o + j];
                c11[j] = m1 + m4 - m5 + m7;
                c12[j] = m3 + m5;
                c21[j] = m2 + m4;
                c22[j] = m1 - m2 + m3 + m6;
            }
        });
    }

    // Freivalds' check of the serial reference: C x == A (B x) for an integer vector x (exact in
    // doubles), O(n^2), independent of Strassen's recursion.
    void check_freivalds() const {
        std::vector<double> x(n_), bx(n_, 0), abx(n_, 0), cx(n_, 0);
        for (std::size_t j = 0; j < n_; ++j) x[j] = double(int(mix(0xF000'0000ull + j) % 7) - 3);
        for (std::size_t i = 0; i < n_; ++i)
            for (std::size_t j = 0; j < n_; ++j) {
                bx[i] += b_[i * n_ + j] * x[j];
                cx[i] += c_[i * n_ + j] * x[j];
            }
        for (std::size_t i = 0; i < n_; ++i)
            for (std::size_t j = 0; j < n_; ++j) abx[i] += a_[i * n_ + j] * bx[j];
        if (cx != abx) throw std::logic_error("strassen: the serial product fails Freivalds' check");
    }

    std::size_t n_;
    std::vector<double> a_, b_, c_;
    bool checked_ = false;
};

}  // namespace fair_kernels
