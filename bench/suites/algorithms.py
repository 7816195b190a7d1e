"""Suite `algorithms`: Promptly's parallel sorts, scan and grain-less (adaptive) loops against
oneTBB, libstdc++'s parallel algorithms (std::execution::par on its oneTBB backend) and Rayon.

Programs: bench/algorithms/ (C++) and bench/rust/src/bin/sort.rs (Rayon); inputs and answers in
bench/algorithms/algo_common.hpp and grain_workload.hpp. Every program of a bench computes the
same checksum of its output, which the harness compares. The targets (docs/algorithms.md's
claims) are checked in latest.md's "Targets" table:

  sort         Promptly <= 1.0x the best peer at 2 workers, <= 1.1x at 1 worker
  scan         Promptly <= 1.1x the best peer
  auto grain   Promptly without a grain within 10% of its best hand-picked grain
               (runtime `promptly-best-grain`: the program runs every grain of --grains in
               each repetition, round-robin, and reports the fastest grain's median) and of
               oneTBB's auto_partitioner

Bench and runtime names are stable (bench/results/algorithms/latest.json).
"""

SORT_PEERS = ["tbb", "std-par", "rayon"]
SCAN_PEERS = ["tbb", "std-par"]

_RELATIVE = [
    {"name": "speedup_vs_serial", "ref": {"runtime": "serial", "workers": 1}},
    {"name": "speedup_vs_w1", "ref": {"workers": 1}},
]


def _sort_bench(name, title, dist, n, quick_n, stable=False):
    if stable:  # oneTBB has no stable sort
        runtimes = {
            "promptly": {"exe": "cmake:bench_algo_sort_promptly"},
            "std-par": {"exe": "cmake:bench_algo_sort_tbb", "args": ["--impl", "std-par"]},
            "rayon": {"exe": "cargo:sort"},
            "serial": {"exe": "cmake:bench_algo_sort_serial", "workers": [1]},
        }
    else:
        runtimes = {
            "promptly": {"exe": "cmake:bench_algo_sort_promptly"},
            "tbb": {"exe": "cmake:bench_algo_sort_tbb", "args": ["--impl", "tbb"]},
            "std-par": {"exe": "cmake:bench_algo_sort_tbb", "args": ["--impl", "std-par"]},
            "rayon": {"exe": "cargo:sort"},
            "serial": {"exe": "cmake:bench_algo_sort_serial", "workers": [1]},
        }
    return {
        "name": name,
        "title": title,
        "params": {"dist": dist, "n": n, "stable": int(stable)},
        "quick_params": {"n": quick_n},
        "workers": [1, 2],
        "args": ["--dist", "{dist}", "--n", "{n}", "--stable", "{stable}"],
        "inner": [1, 2],
        "quick_inner": [1, 1],
        "runtimes": runtimes,
        "relative": _RELATIVE,
        "show": ["speedup_vs_serial", "speedup_vs_w1", "run_util"],
        "timeout_s": 300,
    }


def _grain_bench(name, title, kind, n, quick_n, grains):
    return {
        "name": name,
        "title": title,
        "params": {"kind": kind, "n": n},
        "quick_params": {"n": quick_n},
        "workers": [1, 2],
        "args": ["--kind", "{kind}", "--n", "{n}"],
        "inner": [2, 9],
        "quick_inner": [1, 2],
        "runtimes": {
            "promptly": {"exe": "cmake:bench_algo_grain_promptly", "args": ["--grains", "0"]},
            "promptly-best-grain": {"exe": "cmake:bench_algo_grain_promptly",
                                    "params": {"grains": grains}, "args": ["--grains", "{grains}"]},
            "tbb": {"exe": "cmake:bench_algo_grain_tbb"},
            "serial": {"exe": "cmake:bench_algo_grain_serial", "workers": [1]},
        },
        "relative": _RELATIVE,
        "show": ["best_grain", "speedup_vs_serial", "speedup_vs_w1", "run_util"],
        "timeout_s": 300,
    }


def _median(results, bench, runtime, workers):
    for r in results:
        if r["bench"] == bench and r["runtime"] == runtime and r["params"]["workers"] == workers:
            return r["metrics"]["region_s"]["median"]
    return None


def targets(results):
    """Promptly's median region time over the reference's, per bench and worker count, against
    the suite's targets (module docstring)."""
    rows = []
    benches = list(dict.fromkeys(r["bench"] for r in results))
    for b in benches:
        for w in sorted({r["params"]["workers"] for r in results if r["bench"] == b}):
            mine = _median(results, b, "promptly", w)
            if mine is None:
                continue
            if b.startswith(("sort-", "stable-sort-")) or b.startswith("scan-"):
                peers = SCAN_PEERS if b.startswith("scan-") else SORT_PEERS
                got = {p: _median(results, b, p, w) for p in peers}
                got = {p: t for p, t in got.items() if t is not None}
                if not got:
                    continue
                best = min(got, key=got.get)
                limit = 1.1 if b.startswith("scan-") or w == 1 else 1.0
                checks = [(f"best peer ({best})", got[best], limit)]
            else:
                checks = [(ref, _median(results, b, ref, w), 1.1) for ref in ("promptly-best-grain", "tbb")]
            for ref, t, limit in checks:
                if t is None:
                    continue
                ratio = mine / t
                rows.append([b, str(w), ref, f"{mine * 1e3:.4g}", f"{t * 1e3:.4g}", f"{ratio:.3f}",
                             f"<= {limit:.1f}", "met" if ratio <= limit else f"missed by {(ratio / limit - 1) * 100:.0f}%"])
    text = ("Promptly's median `region_s` over the reference's at the same worker count (medians of "
            "the measured rounds; a ratio > limit misses the target).")
    return "Targets", text, ["bench", "workers", "reference", "promptly ms", "reference ms", "ratio", "limit", "verdict"], rows


SUITE = {
    "name": "algorithms",
    "title": "Parallel algorithms: sorts, scan and grain-less loops",
    "runtime_order": ["promptly", "promptly-best-grain", "tbb", "std-par", "rayon", "serial"],
    "benches": [
        _sort_bench("sort-u32-uniform", "sort 10^7 uint32, uniform random", "uniform", 10_000_000, 1_000_000),
        _sort_bench("sort-u32-sorted", "sort 10^7 uint32, already sorted", "sorted", 10_000_000, 1_000_000),
        _sort_bench("sort-u32-reversed", "sort 10^7 uint32, reversed", "reversed", 10_000_000, 1_000_000),
        _sort_bench("sort-u32-few-unique", "sort 10^7 uint32, 16 distinct keys", "few-unique", 10_000_000, 1_000_000),
        _sort_bench("sort-string", "sort 10^6 std::string (8-24 random letters)", "strings", 1_000_000, 100_000),
        _sort_bench("stable-sort-u32-uniform", "stable sort 10^7 uint32, uniform random (oneTBB has none)",
                    "uniform", 10_000_000, 1_000_000, stable=True),
        {
            "name": "scan-i64-1e8",
            "title": "inclusive prefix sum of 10^8 int64 into a second array (1.6 GB)",
            "params": {"n": 100_000_000},
            "quick_params": {"n": 10_000_000},
            "workers": [1, 2],
            "args": ["--n", "{n}"],
            "inner": [1, 5],
            "quick_inner": [1, 2],
            "runtimes": {
                "promptly": {"exe": "cmake:bench_algo_scan_promptly"},
                "tbb": {"exe": "cmake:bench_algo_scan_tbb", "args": ["--impl", "tbb"]},
                "std-par": {"exe": "cmake:bench_algo_scan_tbb", "args": ["--impl", "std-par"]},
                "serial": {"exe": "cmake:bench_algo_scan_serial", "workers": [1]},
            },
            "relative": _RELATIVE,
            "show": ["speedup_vs_serial", "speedup_vs_w1", "run_util"],
            "timeout_s": 300,
        },
        _grain_bench("grain-sum", "sum of 5*10^7 uint32 (parallel_reduce, memory-bound)", "sum",
                     50_000_000, 5_000_000, "2048,32768,524288"),
        _grain_bench("grain-map", "out[i] = 4 mix rounds of i, 10^7 uint64 (parallel_for)", "map",
                     10_000_000, 1_000_000, "1024,16384,262144"),
        _grain_bench("grain-blur", "3x3 box blur of a 4096 x 4096 uint32 image (2D parallel_for, tiles)", "blur",
                     4096, 1024, "4096,65536,1048576"),
        _grain_bench("grain-irregular", "out[i] = i/4 mix rounds of i, i < 16384: work proportional to i",
                     "irregular", 16384, 4096, "16,256,4096"),
    ],
    "tables": [targets],
}
