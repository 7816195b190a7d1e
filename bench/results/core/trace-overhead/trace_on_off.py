# Alternates fib(32) without cutoff with the trace off and on: python3 trace_on_off.py BENCH_FIB_PROMPTLY ROUNDS
import json, os, statistics, subprocess, sys
prog = sys.argv[1]; rounds = int(sys.argv[2])
res = {}
for r in range(rounds):
    for w in (1, 2):
        for traced in ((False, True) if r % 2 == 0 else (True, False)):
            env = dict(os.environ)
            if traced: env["PROMPTLY_TRACE"] = f"/tmp/fib-trace-w{w}.json"
            out = subprocess.run([prog, "--n", "32", "--cutoff", "2", "--workers", str(w), "--warmup", "2", "--reps", "10"],
                                 capture_output=True, text=True, env=env, check=True).stdout
            m = json.loads([l for l in out.splitlines() if l.startswith("RESULT ")][0][7:])["metrics"]
            res.setdefault((w, traced), []).append(m["region_s"] * 1e3)
for w in (1, 2):
    off, on = res[(w, False)], res[(w, True)]
    print(f"| {w} | {statistics.median(off):.2f} ({min(off):.2f}-{max(off):.2f}) | {statistics.median(on):.2f} ({min(on):.2f}-{max(on):.2f}) | {statistics.median(on)/statistics.median(off):.3f} |")
