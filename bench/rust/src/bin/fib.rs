// fib(n) with Rayon: every call with n >= cutoff forks its two branches with rayon::join
// (one spawn per call, as in every other runtime of the `core` suite); below the cutoff plain
// recursion. Runs inside a ThreadPool of --workers threads; each timed repetition is one
// pool.install(). Protocol: bench/README.md (one RESULT line on stdout).
use promptly_bench_peers::protocol;

fn fib_serial(n: i64) -> i64 {
    if n < 2 {
        n
    } else {
        fib_serial(n - 1) + fib_serial(n - 2)
    }
}

fn fib(n: i64, cutoff: i64) -> i64 {
    if n < cutoff {
        return fib_serial(n);
    }
    let (x, y) = rayon::join(|| fib(n - 1, cutoff), || fib(n - 2, cutoff));
    x + y
}

fn main() {
    let mut args = protocol::Args::parse();
    let n = args.get("n", 32);
    let cutoff = args.get("cutoff", 2).max(2);
    let workers = args.get("workers", 2);
    let (warmup, reps) = (args.get("warmup", 2), args.get("reps", 10));
    args.finish();

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers as usize)
        .build()
        .unwrap_or_else(|e| protocol::fail(&format!("thread pool: {e}")));
    protocol::measure_and_report(warmup, reps, || {
        let m = std::hint::black_box(n);
        pool.install(|| fib(m, cutoff))
    });
}
