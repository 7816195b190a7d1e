"""Suite `priority_sweep`: the rho, L and delta sweeps of aps on fib-ep and fib-rp (I-Cilk, Figs. 3
and 4, and the efficiency threshold delta), split from suite `priority` so that each finishes in
under 10 minutes at --reps 3 (this one: 10 runtimes at 2 workers, ~22 s each on fib-ep and ~10 s on
fib-rp, about 6 minutes). Same programs, benches and metrics as `priority`
(bench/suites/priority.py, which also says why fib-rp is two strands per level); `promptly-aps`
(rho = 2, L = 500 us, delta = 0.9) is run here too, as the sweeps' common point and the baseline
of the ratio column.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("promptly_suite_priority_base", Path(__file__).with_name("priority.py"))
_priority = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_priority)

SUITE = {
    "name": "priority_sweep",
    "title": "aps sweeps: rho (I-Cilk Fig. 3), quantum L (Fig. 4) and delta on fib-ep / fib-rp",
    "runtime_order": [
        "promptly-aps", "promptly-aps-rho1.2", "promptly-aps-rho1.5", "promptly-aps-rho1.75",
        "promptly-aps-L100us", "promptly-aps-L1ms", "promptly-aps-L10ms",
        "promptly-aps-delta0.5", "promptly-aps-delta0.75", "promptly-aps-delta0.99",
    ],
    "benches": [
        _priority.fib_bench("fib-ep", *_priority.FIB_EP, runtimes=_priority.sweep_runtimes()),
        _priority.fib_bench("fib-rp", *_priority.FIB_RP, runtimes=_priority.sweep_runtimes()),
    ],
}
