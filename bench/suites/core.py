"""Suite `core`: fork-join spawn cost, scaling with a serial cutoff, and the sleep protocol.

The core runtime's benchmarks. Bench and runtime names are stable: the steering side reads them from
bench/results/core/latest.json. The format of this file is described in bench/README.md.
"""

from functools import lru_cache


@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@lru_cache(maxsize=None)
def spawns(n, cutoff):
    """Calls with n >= cutoff in the fib(n) call tree: each spawns once."""
    return 0 if n < cutoff else 1 + spawns(n - 1, cutoff) + spawns(n - 2, cutoff)


def _per_spawn(runtime, p, m):
    if runtime == "serial" or "region_s" not in m:
        return {}
    ns = m["region_s"] / spawns(p["n"], p["cutoff"]) * 1e9
    return {"ns_per_spawn": ns, "worker_ns_per_spawn": ns * p["workers"]}


def _per_future(runtime, p, m):
    return {"ns_per_future": m["region_s"] / p["n"] * 1e9} if "region_s" in m else {}


# Every fib program: same algorithm (one spawn per call with n >= cutoff, plain recursion below).
_FIB_RUNTIMES = {
    "promptly": {"exe": "cmake:bench_fib_promptly"},
    "tbb": {"exe": "cmake:bench_fib_tbb"},
    "openmp": {"exe": "cmake:bench_fib_openmp", "env": {"OMP_NUM_THREADS": "{workers}"}},
    "go": {"exe": "go:fib", "env": {"GOMAXPROCS": "{workers}"}},
    "rayon": {"exe": "cargo:fib", "env": {"RAYON_NUM_THREADS": "{workers}"}},
    # The serial elision (spawn -> call). One thread by definition: runs at workers=1 only and is
    # the reference of both worker counts.
    "serial": {"exe": "cmake:bench_fib_serial", "workers": [1]},
}

_FIB_ARGS = ["--n", "{n}", "--cutoff", "{cutoff}"]


def _sum_mod1000(n):
    """Sum of i % 1000 over [0, n): the answer of reduce-sum (mod 2^64, never reached)."""
    full, rest = divmod(n, 1000)
    return full * (999 * 1000 // 2) + rest * (rest - 1) // 2


# The reduce benches (bench/core/reduce_workload.hpp): Promptly's parallel_reduce against
# oneTBB's, both with its default auto_partitioner and with simple_partitioner at Promptly's
# grain (the same halving), and the serial loop.
_REDUCE_RUNTIMES = {
    "promptly": {"exe": "cmake:bench_reduce_promptly"},
    "tbb": {"exe": "cmake:bench_reduce_tbb", "params": {"partitioner": "auto"}},
    "tbb-simple": {"exe": "cmake:bench_reduce_tbb", "params": {"partitioner": "simple"}},
    "serial": {"exe": "cmake:bench_reduce_serial", "workers": [1]},
}
_REDUCE_ARGS = ["--kind", "{kind}", "--n", "{n}", "--rounds", "{rounds}", "--grain", "{grain}"]
_REDUCE_RELATIVE = [
    {"name": "speedup_vs_serial", "ref": {"runtime": "serial", "workers": 1}},
    {"name": "speedup_vs_w1", "ref": {"workers": 1}},
]


def _reduce_bench(name, title, params, quick_n, expected=None):
    bench = {
        "name": name,
        "title": title,
        "params": params,
        "quick_params": {"n": quick_n},
        "workers": [1, 2],
        "args": _REDUCE_ARGS,
        "inner": [1, 7],
        "quick_inner": [1, 3],
        "runtimes": _REDUCE_RUNTIMES,
        "relative": _REDUCE_RELATIVE,
        "show": ["speedup_vs_serial", "speedup_vs_w1", "run_util"],
        "timeout_s": 300,
    }
    if expected is not None:
        bench["expected"] = expected
    return bench

SUITE = {
    "name": "core",
    "title": "Core runtime: spawn cost, scaling, sleep protocol",
    # column order of the tables (default: order of first appearance)
    "runtime_order": ["promptly", "promptly-traced", "promptly-nosleep", "tbb", "tbb-simple", "openmp", "go", "rayon", "serial"],
    "benches": [
        {
            "name": "fib32-nocutoff",
            "title": "fib(32), every call with n >= 2 spawns (no serial cutoff)",
            "params": {"n": 32, "cutoff": 2},
            "quick_params": {"n": 27},
            "workers": [1, 2],
            "args": _FIB_ARGS,
            # in-process repetitions: (warm-up, timed); slow runtimes get fewer.
            "inner": [2, 10],
            "quick_inner": [1, 3],
            "runtimes": {
                **_FIB_RUNTIMES,
                # The event trace on (runtime_config::trace_file via PROMPTLY_TRACE; the file is
                # written at exit, outside the timed region): its cost on the spawn-heaviest bench.
                "promptly-traced": {**_FIB_RUNTIMES["promptly"],
                                    "env": {"PROMPTLY_TRACE": "/tmp/promptly-fib-trace-w{workers}.json"}},
                "openmp": {**_FIB_RUNTIMES["openmp"], "inner": [1, 3]},
                "go": {**_FIB_RUNTIMES["go"], "inner": [1, 3]},
            },
            "expected": lambda p: fib(p["n"]),
            "derived": _per_spawn,
            "relative": [
                {"name": "speedup_vs_serial", "ref": {"runtime": "serial", "workers": 1}},
                {"name": "speedup_vs_w1", "ref": {"workers": 1}},
            ],
            "show": ["ns_per_spawn", "worker_ns_per_spawn", "speedup_vs_serial", "run_util"],
            "timeout_s": 300,
        },
        {
            "name": "fib40-cutoff20",
            "title": "fib(40), serial below n < 20",
            "params": {"n": 40, "cutoff": 20},
            "quick_params": {"n": 35},
            "workers": [1, 2],
            "args": _FIB_ARGS,
            "inner": [1, 5],
            "quick_inner": [1, 3],
            "runtimes": _FIB_RUNTIMES,
            "expected": lambda p: fib(p["n"]),
            "derived": _per_spawn,
            "relative": [
                {"name": "speedup_vs_serial", "ref": {"runtime": "serial", "workers": 1}},
                {"name": "speedup_vs_w1", "ref": {"workers": 1}},
            ],
            "show": ["speedup_vs_serial", "speedup_vs_w1", "run_util"],
            "timeout_s": 300,
        },
        {
            "name": "chain-futures-1M",
            "title": "chain of 10^6 dependent futures: x = async(x + 1).get()",
            "params": {"n": 1_000_000},
            "quick_params": {"n": 100_000},
            "workers": [1, 2],
            "args": ["--n", "{n}", "--sleep", "{sleep}"],
            "inner": [1, 5],
            "quick_inner": [1, 3],
            "runtimes": {
                "promptly": {"exe": "cmake:bench_chain_promptly", "params": {"sleep": "adaptive"}},
                "promptly-nosleep": {"exe": "cmake:bench_chain_promptly", "params": {"sleep": "never"}},
            },
            "expected": lambda p: p["n"],
            "derived": _per_future,
            "show": ["run_util", "ns_per_future"],
            "plot": ["run_util"],
            "timeout_s": 300,
        },
        # Pools made and removed at run time, and workers moved between pools: Promptly
        # only (no peer has run-time pools with a policy); the targets are in bench/README.md.
        *[{
            "name": f"pools-{what}",
            "title": title,
            "params": {"what": what, "n": n},
            "quick_params": {"n": n // 10},
            "workers": workers,
            "args": ["--what", "{what}", "--n", "{n}"],
            "inner": [1, 3],
            "quick_inner": [1, 1],
            "runtimes": {"promptly": {"exe": "cmake:bench_pools_promptly"}},
            "expected": lambda p: p["n"],
            "show": show,
            "timeout_s": 300,
        } for what, title, workers, show, n in [
            ("create-remove-empty", "create + remove 10^5 empty pools", [2],
             ["create_p50_us", "create_p99_us", "remove_p50_us", "remove_p99_us"], 100_000),
            ("create-remove-task", "create a pool, run one task in it, remove it; 10^5 times", [2],
             ["create_p50_us", "create_p99_us", "remove_p50_us", "remove_p99_us", "op_p50_us", "op_p99_us",
              "decision_p50_us", "decision_p99_us"], 100_000),
            ("switch", "a worker moved between two pools and back, 10^5 times (prompt, 1 worker)", [1],
             ["op_p50_us", "op_p99_us", "decision_p50_us", "decision_p99_us"], 100_000),
            ("realloc", "core reallocation: a policy gives a busy core to a job pool and back, 10^4 times; "
             "op = decision to the job's task running on the moved core (2 workers)", [2],
             ["op_p50_us", "op_p99_us", "decision_p50_us", "decision_p99_us"], 10_000),
        ]],
        # Decision cost against the pool count: 8 or 4000 live pools (one level and pools of rank 1),
        # 4000 trivial tasks one after the other (submit, get), all in the least urgent pool
        # (many-idle: the others live and idle) or task i in pool i mod P (many-spread); each task
        # costs at least two decisions. One runtime per shipped policy; Promptly only (no peer has
        # pools under a policy). Target: us_per_task at 4000 pools within 2x of 8 pools.
        *[{
            "name": f"pools-many-{what}-{pools}",
            "title": f"{pools} live pools, 4000 trivial tasks {where} (us per task, per policy)",
            "params": {"what": f"many-{what}", "n": 4000, "pools": pools},
            "quick_params": {"n": 400},
            "workers": [2],
            "args": ["--what", "{what}", "--n", "{n}", "--pools", "{pools}", "--policy", "{policy}"],
            "inner": [1, 3],
            "quick_inner": [0, 1],
            "runtimes": {f"promptly-{policy}": {"exe": "cmake:bench_pools_promptly", "params": {"policy": policy}}
                         for policy in ["prompt", "aps", "oblivious", "fair", "equi", "drep",
                                        "drep-steal-boundary", "asteal", "elastic"]},
            "expected": lambda p: p["n"],
            "show": ["us_per_task", "decisions"],
            "timeout_s": 600,
        } for what, where in [("idle", "in the least urgent pool"), ("spread", "spread over the pools")]
          for pools in [8, 4000]],
        _reduce_bench("reduce-sum-1e8", "parallel_reduce: sum of 10^8 uint32 values (memory-bound, 400 MB)",
                      {"kind": "sum", "n": 100_000_000, "rounds": 0, "grain": 16_384}, 10_000_000,
                      expected=lambda p: _sum_mod1000(p["n"])),
        # no closed form: the harness checks that every runtime computes the serial loop's answer
        _reduce_bench("reduce-map-1e7",
                      "parallel_reduce: sum of a 16-round 64-bit hash of i over 10^7 indices (compute-bound)",
                      {"kind": "map", "n": 10_000_000, "rounds": 16, "grain": 4_096}, 1_000_000),
    ],
}
