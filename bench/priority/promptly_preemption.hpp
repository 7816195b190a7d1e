// The preemption knob of the `preempt` benches' Promptly programs (--preemption 0|1).
#pragma once

#include "bench_common.hpp"

namespace prio {

// --preemption 0|1: the rows "with preemption" of `preempt`. A runtime_config that has the knob
// (a member `preemption` with a bool `enabled`) gets it set; without the knob, asking for it is an
// error that says so, and leaving it out keeps the library's default. Adapt this one function if
// the knob is spelt differently.
template <class Config>  // a template, so that the requires-expression may name a missing member
void set_preemption(Config& cfg, long on) {
    if (on < 0) return;  // not given: the library's default
    if constexpr (requires { cfg.preemption.enabled = true; }) {
        cfg.preemption.enabled = on == 1;
    } else {
        bench::args::fail("--preemption: this build's runtime_config has no preemption knob");
    }
}

}  // namespace prio
