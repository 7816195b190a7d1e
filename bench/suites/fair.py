"""Suite `fair`: fairly prompt scheduling (the fairly prompt paper, Sec. 6.2).

Bench and runtime names are stable: the steering side reads them from
bench/results/fair/latest.json. Programs: bench/fair/README.md.

  stretch-KERNEL-CRITERION   the fairly prompt paper Table 1 / Fig. 8. Three levels: echo at 50 interactions/s
                             (level 0), a time sink that never runs out of parallel work (level 1),
                             the compute kernel (level 2). One server process alternates the kernel
                             under the baseline criterion 0-0-100 (no interactions) and under
                             CRITERION (interactions on): stretch = loaded / baseline time,
                             expected_stretch = 100 / L, stretch_ratio = measured / expected,
                             baseline_s; share_L*_sampled / _received = the runtime's accounting of
                             worker-rounds drawn and worker time received per level in the loaded
                             run. Runtime promptly-fair = network echo, promptly-fair-term =
                             terminal echo.
  echo-response-CRITERION    the fairly prompt paper Fig. 9: echo response times (latency_us_*) under CRITERION,
                             fib kernel at the bottom, time sink in the middle.
  wta-KERNEL                 the fairly prompt paper Table 3: winner-take-all (criterion 100-0, two levels: echo
                             and kernel): response times and the kernel's speedup over its serial
                             version (speedup = serial_s / region_s), 1 and 2 workers.
  alone-KERNEL               the fairly prompt paper Table 2: the kernel alone (one level) under fair vs
                             oblivious, 1 and 2 workers (the price of generality).

KERNEL in fib, uts, strassen, bfs, sort (bench/fair/kernels/, each verified against its serial
version in every run); the full scale takes about 1-1.5 s alone on 2 workers here.
"""

KERNELS = ["fib", "uts", "strassen", "bfs", "sort"]
STRETCH_CRITERIA = ["50-0-50", "50-25-25"]
ECHO_CRITERIA = ["50-25-25", "25-25-50", "5-45-50"]

_DRIVER_ARGS = ["--server", "cmake:bench_fair_echo", "--policy", "fair", "--mode", "{mode}",
                "--rate", "{rate}", "--conns", "{conns}", "--n", "{sink_n}", "--cutoff", "{sink_cutoff}",
                "--min-loaded-ms", "{min_loaded_ms}", "--expected-stretch", "{expected_stretch}",
                "--server-args", "--kernel {kernel} --scale {scale} --criterion {criterion}"]
_COMMON = {"rate": 50, "conns": 8, "sink_n": 30, "sink_cutoff": 16, "min_loaded_ms": 0, "scale": "full"}
_QUICK = {"scale": "quick"}
_LATENCY = ["latency_us_p50", "latency_us_p95", "latency_us_p99", "latency_us_max"]


def _expected_stretch(criterion):
    return 100.0 / float(criterion.split("-")[-1])


def _echo_runtimes(term_too):
    r = {"promptly-fair": {"exe": "cmake:bench_io_driver", "params": {"mode": "net"}}}
    if term_too:
        r["promptly-fair-term"] = {"exe": "cmake:bench_io_driver", "params": {"mode": "term", "conns": 1}}
    return r


def _stretch(kernel, criterion):
    return {
        "name": f"stretch-{kernel}-{criterion}",
        "title": f"{kernel} at the bottom level under {criterion} vs 0-0-100 (echo at the top, time sink "
                 f"in the middle); expected stretch {_expected_stretch(criterion):g}",
        "params": {**_COMMON, "kernel": kernel, "criterion": criterion,
                   "expected_stretch": _expected_stretch(criterion)},
        "quick_params": _QUICK,
        "workers": [2],
        "args": _DRIVER_ARGS,
        # in-process repetitions [warm-up, timed], each one baseline + one loaded kernel run
        "inner": [1, 1],
        "quick_inner": [1, 1],
        "runtimes": _echo_runtimes(term_too=True),
        "baseline": "promptly-fair",
        "show": ["stretch", "expected_stretch", "stretch_ratio", "baseline_s", "share_L2_sampled",
                 "share_L2_received", "latency_us_p99"],
        "plot": ["stretch_ratio"],
        "timeout_s": 300,
        "quick_timeout_s": 60,
    }


def _echo_response(criterion):
    return {
        "name": f"echo-response-{criterion}",
        "title": f"network echo response times under {criterion} (fib at the bottom, time sink in the middle)",
        "params": {**_COMMON, "kernel": "fib", "criterion": criterion,
                   "expected_stretch": _expected_stretch(criterion), "min_loaded_ms": 6000},
        "quick_params": {**_QUICK, "min_loaded_ms": 1500},
        "workers": [2],
        "args": _DRIVER_ARGS,
        "inner": [1, 2],
        "quick_inner": [1, 1],
        "runtimes": _echo_runtimes(term_too=False),
        "baseline": "promptly-fair",
        "show": _LATENCY + ["interactions", "dropped", "stretch"],
        "plot": ["latency_us_p99"],
        "timeout_s": 300,
        "quick_timeout_s": 60,
    }


def _wta(kernel):
    return {
        "name": f"wta-{kernel}",
        "title": f"winner-take-all (100-0): network echo at the top, {kernel} below; response time and "
                 f"speedup over serial",
        "params": {**_COMMON, "kernel": kernel, "criterion": "100-0", "expected_stretch": 0,
                   "min_loaded_ms": 2000},
        "quick_params": {**_QUICK, "min_loaded_ms": 500},
        "workers": [1, 2],
        "args": _DRIVER_ARGS,
        "inner": [1, 1],
        "quick_inner": [1, 1],
        "runtimes": _echo_runtimes(term_too=False),
        "baseline": "promptly-fair",
        "derived": lambda runtime, p, m: {"speedup": m["serial_s"] / m["region_s"]},
        "show": ["latency_us_p50", "latency_us_p99", "speedup", "compute_slowdown", "serial_s"],
        "plot": ["latency_us_p99", "speedup"],
        "timeout_s": 300,
        "quick_timeout_s": 60,
    }


def _alone(kernel):
    return {
        "name": f"alone-{kernel}",
        "title": f"{kernel} alone (one level): fair vs oblivious",
        "params": {"kernel": kernel, "scale": "full"},
        "quick_params": _QUICK,
        "workers": [1, 2],
        "args": ["--kernel", "{kernel}", "--scale", "{scale}", "--policy", "{policy}"],
        "inner": [1, 2],
        "quick_inner": [1, 1],
        "runtimes": {
            "promptly-oblivious": {"exe": "cmake:bench_fair_kernel", "params": {"policy": "oblivious"}},
            "promptly-fair": {"exe": "cmake:bench_fair_kernel", "params": {"policy": "fair"}},
        },
        "baseline": "promptly-oblivious",
        "show": [],
        "timeout_s": 300,
        "quick_timeout_s": 60,
    }


SUITE = {
    "name": "fair",
    "title": "Fairly prompt scheduling: stretch, response times, winner-take-all, price of generality "
             "(the fairly prompt paper Sec. 6.2)",
    "runtime_order": ["promptly-fair", "promptly-fair-term", "promptly-oblivious"],
    "benches": [_stretch(k, c) for c in STRETCH_CRITERIA for k in KERNELS]
    + [_echo_response(c) for c in ECHO_CRITERIA]
    + [_wta(k) for k in KERNELS]
    + [_alone(k) for k in KERNELS],
}
