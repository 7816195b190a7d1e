"""Suite `graph`: the Taskflow executor paper's micro-benchmarks (Sec. III-A) for task dependency graphs.

The task-graph benchmarks. Bench and runtime names are stable: the steering side reads them from
bench/results/graph/latest.json. The format of this file is described in bench/README.md.

Each repetition builds a fresh graph, runs it once and destroys it; the programs report the
three phases separately (build_s, region_s = the run, destroy_s, and their sum total_s) and the
run's CPU utilisation (run_util = process user+sys CPU over the run / run wall time). Workers
1 and 2 fit this 2-core machine; 4 and 8 are oversubscribed on purpose: that is where thieves
that never sleep cost the most.
"""

def _runtimes(shape):
    """Promptly with the Taskflow executor paper's sleep protocol, Promptly with thieves that never sleep (the ABP
    baseline of the Taskflow executor paper Sec. III), and oneTBB's flow_graph. Only Promptly takes --sleep."""
    return {
        "promptly": {"exe": f"cmake:bench_graph_{shape}_promptly", "params": {"sleep": "adaptive"},
                     "args": ["--sleep", "{sleep}"]},
        "promptly-nosleep": {"exe": f"cmake:bench_graph_{shape}_promptly", "params": {"sleep": "never"},
                             "args": ["--sleep", "{sleep}"]},
        "tbb": {"exe": f"cmake:bench_graph_{shape}_tbb"},
    }


def _matmul_checksum(p):
    """Sum of C = A * B with A[i][j] = (i + j) % 7 - 3 and B[i][j] = (i * j) % 5 - 2
    (bench/graph/graph_bench.hpp): sum_k colsum(A)[k] * rowsum(B)[k]."""
    n = p["n"]
    total = 0
    for k in range(n):
        col_a = sum((i + k) % 7 - 3 for i in range(n))
        row_b = sum((k * j) % 5 - 2 for j in range(n))
        total += col_a * row_b
    return total


def _per_task(tasks):
    def derive(runtime, p, m):
        if "region_s" not in m:
            return {}
        return {"run_ns_per_task": m["region_s"] / tasks(p) * 1e9,
                "total_ns_per_task": m.get("total_s", 0.0) / tasks(p) * 1e9}
    return derive


_WORKERS = [1, 2, 4, 8]
_RELATIVE = [
    {"name": "speedup_vs_tbb", "ref": {"runtime": "tbb"}},
    {"name": "total_speedup_vs_tbb", "ref": {"runtime": "tbb"}, "metric": "total_s"},
]
_SHOW = ["build_s", "destroy_s", "total_s", "run_util", "speedup_vs_tbb", "total_speedup_vs_tbb"]

SUITE = {
    "name": "graph",
    "title": "Task dependency graphs: the Taskflow executor paper's micro-benchmarks",
    "runtime_order": ["promptly", "promptly-nosleep", "tbb"],
    "benches": [
        {
            "name": "graph-chain",
            "title": "linear chain of 2^20 tasks, each increments a counter",
            "params": {"n": 1 << 20},
            "quick_params": {"n": 1 << 16},
            "workers": _WORKERS,
            "args": ["--n", "{n}"],
            "inner": [1, 5],
            "quick_inner": [1, 2],
            "runtimes": _runtimes("chain"),
            "expected": lambda p: p["n"],
            "derived": _per_task(lambda p: p["n"]),
            "relative": _RELATIVE,
            "show": _SHOW + ["run_ns_per_task"],
            "plot": ["run_util", "total_s"],
            "timeout_s": 300,
        },
        {
            "name": "graph-tree",
            "title": "binary tree of 2^20 - 1 tasks (no work)",
            "params": {"n": (1 << 20) - 1},
            "quick_params": {"n": (1 << 16) - 1},
            "workers": _WORKERS,
            "args": ["--n", "{n}"],
            "inner": [1, 5],
            "quick_inner": [1, 2],
            "runtimes": _runtimes("tree"),
            "expected": lambda p: p["n"],
            "derived": _per_task(lambda p: p["n"]),
            "relative": _RELATIVE,
            "show": _SHOW + ["run_ns_per_task"],
            "plot": ["run_util", "total_s"],
            "timeout_s": 300,
        },
        {
            "name": "graph-random",
            "title": "random DAG of 10^6 tasks, in/out-degree <= 4, each marks itself visited",
            "params": {"n": 1_000_000, "seed": 1},
            "quick_params": {"n": 100_000},
            "workers": _WORKERS,
            "args": ["--n", "{n}", "--seed", "{seed}"],
            "inner": [1, 5],
            "quick_inner": [1, 2],
            "runtimes": _runtimes("random"),
            "expected": lambda p: p["n"],
            "derived": _per_task(lambda p: p["n"]),
            "relative": _RELATIVE,
            "show": _SHOW + ["run_ns_per_task"],
            "plot": ["run_util", "total_s"],
            "timeout_s": 300,
        },
        {
            "name": "graph-matmul",
            "title": "C = A * B, 1024 x 1024, row tasks: init rows, barrier, multiply rows",
            "params": {"n": 1024},
            "quick_params": {"n": 256},
            "workers": _WORKERS,
            "args": ["--n", "{n}"],
            "inner": [1, 3],
            "quick_inner": [1, 2],
            "runtimes": _runtimes("matmul"),
            "expected": _matmul_checksum,
            "relative": _RELATIVE + [{"name": "speedup_vs_w1", "ref": {"workers": 1}}],
            "show": _SHOW + ["speedup_vs_w1"],
            "plot": ["run_util"],
            "timeout_s": 600,
        },
    ],
}
