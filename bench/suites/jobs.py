"""Suite `jobs`: a multiprogrammed job server (AMCilk Sec. 6): parallel jobs arrive online, each
runtime shares the 2 cores between the running jobs, and the metric is each job's flow time
(intended arrival -> end). Programs: bench/jobs/ (driver: jobs_common.hpp) and bench/go/jobs.

Trace: bench/jobs/traces/{bing,finance}.trace, written once by bench/jobs/make_trace.py from a
fixed seed and replayed by every runtime open-loop (a job is released at its intended time
whatever is still running: no coordinated omission). Job sizes follow the Bing request-work
distribution (heavy tail, mean 2.79x a base job) and a lighter-tailed finance stand-in with a 3x
larger base job; a base job is ~640 us of work in strands of ~10 us: the paper's segment of
~1280 strands scaled by 1/20 for 2 cores instead of 40. Load rho = lambda * E[work] / P; the
work unit's cost is measured once before the rounds (median of 5 runs, one for the C++ programs,
one for Go's) and every program sets its arrival rate from it (metric unit_ns; rate_per_s the
resulting rate), so every runtime of a language is offered the same schedule. Before, each program
measured at its own start, and the measurement's noise moved one suite run's nominal 90% load
between 86% and 95%, where flow times grow steeply with load.

bing-60 / bing-75 / bing-90 / finance-75: the first `jobs` jobs of the trace at that load.
Metrics flow_ms_mean / _p50 / _p99 / _max; region_s is the mean flow time in seconds, so the
Summary's ratio compares mean flow times against promptly-drep-steal-boundary (the baseline
DREP is measured against in AMCilk Fig. 7). Promptly's runs also report the server's start
(start decision -> root task running) and remove (pool removal) latency and the runtime's
event-to-decision latency: start_us_*, remove_us_*, decision_us_*, and decisions_per_job (policy
decisions during the replay / jobs: about 2 means one arrival and one exit each; more would mean
pools flapping between empty and non-empty).

overheads (AMCilk Sec. 5.1, under 75% Bing load): bing-75's replay on promptly-drep and
promptly-drep-steal-boundary, showing the overheads: start, remove and decision as above, setup_us_*
(start decision -> root task submitted: the start without the wait for a core), end_us_* (the root
task's return -> the job's terminal state, the removal included), and the
runtime's mechanism timings (runtime_stats::mechanism, the last 512 samples per worker):
realloc_us_* (a decision gives a core another pool -> the core serves it: the reallocation, split
into decision_us_* before it and sleep/wake), sleep_us_* (a core given no pool -> asleep),
wake_us_* (a sleeping worker notified -> running), resume_us_* (a parked task made ready ->
running again: preempted work resumed), mug_us_* (a worker starts looking -> it took a whole deque
left at its pool) and steal_us_* (one successful steal); *_samples says how many samples each has.

bing-sweep: the same runtimes replay `jobs` jobs at loads 0.5, 0.6, ... in turn until one is not
sustained: mean flow time above 20 x E[work] / P (beyond it, clients wait for the queue, not for
their job). max_rate_per_s is the arrival rate of the highest sustained load, max_rho that load;
region_s = 1 / max_rate_per_s (lower is better, like every other region_s).

asteal-phases (AMCilk Sec. 6.3): bench/jobs/promptly_phases.cpp, two jobs at once, each
alternating 20 phases between one wide parallel loop and 4000 narrow ones, in opposite phase;
completion_s_a (starts wide) and completion_s_b (starts narrow); promptly-oblivious is "no
partition" (every core serves both jobs), equi the equal split, asteal parallelism feedback.

elastic (AMCilk Sec. 6.2, scaled): bench/jobs/promptly_elastic.cpp, two periodic fib tasks whose
instances are jobs declaring (C, L, T_min = T_max = period, E = 1); task 1's period drops to a
third at random points. The periods are set from task 1's measured serial time C1 (1.875 C1 and
2.08 C1), so that at the reduced period task 1 needs both cores on any host. miss_rate = instances ending after their implicit deadline (the next
release) / instances; region_s is task 1's mean response time.

Runtimes: promptly-<policy> (bench/jobs/promptly_jobs.cpp: the embedded job server of promptlyd
with runtime_config::policy; each job a pool), tbb-process-per-job (bench/jobs/tbb_process_per_job.cpp:
one OS process per job running its own oneTBB runtime with all cores, the kernel sharing the
cores; flow_ms_* include the process start, flow_excl_start_ms_* exclude it), tbb-arenas
(bench/jobs/tbb_arenas.cpp: one process, a oneTBB task_arena per job, oneTBB's market sharing
its threads), go (bench/go/jobs: a goroutine tree per job in one process, GOMAXPROCS = workers).
"""
from pathlib import Path

_TRACES = Path(__file__).resolve().parents[1] / "jobs" / "traces"
_POLICIES = ["equi", "drep", "drep-steal-boundary", "asteal", "serpt"]
# serpt with each job's size as its size_hint, and with a third of the hints 4x off (bench/jobs/promptly_jobs.cpp).
_SERPT_HINTS = {"serpt": "exact", "serpt-wrong-hints": "wrong", "serpt-learned": "none"}


# The work unit's cost sets the arrival schedule (jobs_common.hpp): measured once before the
# rounds (median of 5 runs) and handed to every program of the same language, so that every
# runtime of a round replays the trace at the same load. Each program measuring for itself put
# one suite run's nominal 90% Bing load anywhere in 86-95% (unit 451-601 ns).
_CALIBRATE = [
    {"param": "unit_ns", "exe": "cmake:bench_jobs_promptly", "args": ["--calibrate", "1"], "metric": "unit_ns"},
    {"param": "go_unit_ns", "exe": "go:jobs", "args": ["--calibrate", "1"], "metric": "unit_ns"},
]


def _runtimes():
    cxx = ["--unit-ns", "{unit_ns}"]
    rts = {f"promptly-{p}": {"exe": "cmake:bench_jobs_promptly", "args": ["--policy", p] + cxx, "params": {"policy": p}}
           for p in _POLICIES}
    for name, hints in _SERPT_HINTS.items():
        rts[f"promptly-{name}"] = {"exe": "cmake:bench_jobs_promptly",
                                   "args": ["--policy", "serpt", "--hints", hints] + cxx,
                                   "params": {"policy": "serpt", "hints": hints}}
    rts["tbb-process-per-job"] = {"exe": "cmake:bench_jobs_tbb_process", "args": cxx}
    rts["tbb-arenas"] = {"exe": "cmake:bench_jobs_tbb_arenas", "args": cxx}
    rts["go"] = {"exe": "go:jobs", "args": ["--unit-ns", "{go_unit_ns}"], "env": {"GOMAXPROCS": "{workers}"}}
    return rts


_OVERHEADS = [f"{op}_us_{q}" for op in ["start", "setup", "remove", "end", "decision"] for q in ["p50", "p99"]] + \
    [f"{op}_us_{q}" for op in ["realloc", "sleep", "wake", "resume", "mug", "steal"] for q in ["p50", "p99", "max"]] + \
    [f"{op}_samples" for op in ["realloc", "sleep", "wake", "resume", "mug", "steal"]]

_SHOW = ["flow_ms_mean", "flow_ms_p50", "flow_ms_p99", "flow_ms_max", "rate_per_s", "unit_ns",
         "flow_excl_start_ms_mean", "flow_excl_start_ms_p99",
         "start_us_p50", "start_us_p99", "remove_us_p50", "remove_us_p99", "decision_us_p50", "decision_us_p99",
         "decisions_per_job", "slowdown_mean", "release_late_us_mean", "work_over_estimate"]


def _load_bench(workload, load, jobs=1200):
    return {
        "name": f"{workload}-{load}",
        "title": f"{workload} trace, first {jobs} jobs, Poisson arrivals at {load}% utilisation of the workers",
        "params": {"trace": workload, "rho": load / 100, "jobs": jobs},
        "quick_params": {"jobs": 150},
        "workers": [2],
        "args": ["--trace", str(_TRACES) + "/{trace}.trace", "--rho", "{rho}", "--jobs", "{jobs}"],
        "inner": [0, 1],
        "quick_inner": [0, 1],
        "runtimes": _runtimes(),
        "baseline": "promptly-drep-steal-boundary",
        "show": _SHOW,
        "plot": ["flow_ms_p99"],
        "timeout_s": 180,
        "quick_timeout_s": 60,
    }


SUITE = {
    "name": "jobs",
    "title": "Multiprogrammed job server: flow time of online parallel jobs under core-allocation policies and peers",
    "calibrate": _CALIBRATE,
    "runtime_order": [f"promptly-{p}" for p in _POLICIES] + ["promptly-serpt-wrong-hints", "promptly-serpt-learned", "tbb-process-per-job",
                                                             "tbb-arenas", "go"],
    "benches": [
        _load_bench("bing", 60),
        _load_bench("bing", 75),
        _load_bench("bing", 90),
        _load_bench("finance", 75),
        {
            **_load_bench("bing", 75),
            "name": "overheads",
            "title": "the overheads of bing-75's replay: server start/remove, decisions, and the runtime's "
                     "mechanism (reallocation, sleep, wake, resumption, mugging vs stealing)",
            "runtimes": {k: v for k, v in _runtimes().items() if k in ("promptly-drep", "promptly-drep-steal-boundary")},
            "show": _OVERHEADS,
            "plot": ["realloc_us_p99", "wake_us_p99", "resume_us_p99"],
        },
        {
            "name": "bing-sweep",
            "title": "bing trace, 500 jobs per load, loads 0.5, 0.6, ... 1.1 until one is not sustained",
            "params": {"trace": "bing", "jobs": 500, "sweep": "0.5,0.6,0.7,0.8,0.85,0.9,0.95,1.0,1.1"},
            "quick_params": {"jobs": 100, "sweep": "0.5,0.9"},
            "workers": [2],
            "args": ["--trace", str(_TRACES) + "/{trace}.trace", "--sweep", "{sweep}", "--jobs", "{jobs}"],
            "inner": [0, 1],
            "quick_inner": [0, 1],
            "runtimes": _runtimes(),
            "baseline": "promptly-drep-steal-boundary",
            "show": ["max_rate_per_s", "max_rho", "unit_ns"],
            "plot": ["max_rate_per_s"],
            "timeout_s": 300,
            "quick_timeout_s": 90,
        },
        {
            "name": "asteal-phases",
            "title": "two jobs alternating 20 phases of one wide loop (640k iterations) and 4000 narrow loops "
                     "(5 iterations), in opposite phase; completion time of each",
            "params": {"phases": 20, "rounds": 64},
            "quick_params": {"phases": 4},
            "workers": [2],
            "args": ["--phases", "{phases}", "--rounds", "{rounds}"],
            "inner": [0, 1],
            "quick_inner": [0, 1],
            "runtimes": {f"promptly-{p}": {"exe": "cmake:bench_jobs_phases_promptly", "args": ["--policy", p],
                                           "params": {"policy": p}}
                         for p in ["asteal", "equi", "oblivious"]},
            "baseline": "promptly-equi",
            "show": ["completion_s_a", "completion_s_b"],
            "plot": ["completion_s_a", "completion_s_b"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
        {
            "name": "elastic",
            "title": "two periodic parallel fib tasks (fib(35) every 1.875 C1, C1 its measured serial time, a third "
                     "of that at 5 random points for 1-10 instances; fib(34) every 2.08 C1); deadline misses",
            "params": {"iterations": 100, "changes": 5},
            "quick_params": {"iterations": 20, "changes": 2},
            "workers": [2],
            "args": ["--iterations", "{iterations}", "--changes", "{changes}"],
            "inner": [0, 1],
            "quick_inner": [0, 1],
            "runtimes": {f"promptly-{p}": {"exe": "cmake:bench_jobs_elastic_promptly", "args": ["--policy", p],
                                           "params": {"policy": p}}
                         for p in ["elastic", "equi", "drep"]},
            "baseline": "promptly-equi",
            "show": ["miss_rate", "miss_rate_1", "miss_rate_2", "resp_ms_p99_1", "resp_ms_p99_2", "work1_ms", "period1_ms"],
            "plot": ["miss_rate"],
            "timeout_s": 120,
            "quick_timeout_s": 60,
        },
    ],
}
