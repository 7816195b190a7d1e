"""Suite `priority_sweep`: the rho and L sweeps of aps on fib-ep and fib-rp (I-Cilk, Figs. 3 and 4),
split from suite `priority` so that each finishes in under 10 minutes at --reps 3. Same programs,
benches and metrics as `priority` (bench/suites/priority.py); `promptly-aps` (rho = 2, L = 500 us)
is run here too, as the sweeps' common point and the baseline of the ratio column.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("promptly_suite_priority_base", Path(__file__).with_name("priority.py"))
_priority = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_priority)

SUITE = {
    "name": "priority_sweep",
    "title": "aps sweeps: rho (I-Cilk Fig. 3) and quantum L (Fig. 4) on fib-ep / fib-rp",
    "runtime_order": [
        "promptly-aps", "promptly-aps-rho1.2", "promptly-aps-rho1.5", "promptly-aps-rho1.75",
        "promptly-aps-L100us", "promptly-aps-L1ms", "promptly-aps-L10ms",
    ],
    "benches": [
        _priority.fib_bench("fib-ep", "fib(n) at H, M, L submitted back to back; fork down to n = 2 "
                            "(ample parallelism); region = all three", 37, 2, 32, 2,
                            runtimes=_priority.sweep_runtimes()),
        _priority.fib_bench("fib-rp", "fib(n) at H, M, L submitted back to back; serial below n-1; "
                            "region = all three", 43, 42, 38, 37, runtimes=_priority.sweep_runtimes()),
    ],
}
