// Sort benches of suite `algorithms` with Rayon: par_sort_unstable (--stable 0) or par_sort
// (--stable 1, Rayon's stable parallel merge sort) of the input that bench/algorithms/
// algo_common.hpp describes, built here by the same formulas (so every runtime sorts the same
// data and computes the same checksum). Runs inside a ThreadPool of --workers threads; each
// repetition copies the input (untimed), then one pool.install() sorts it (timed).
use promptly_bench_peers::protocol;
use rayon::slice::ParallelSliceMut;

// SplitMix64's output function (Steele, Lea, Flood 2014), as bench::mix_step.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

fn keys(dist: &str, n: usize) -> Vec<u32> {
    match dist {
        "uniform" => (0..n).map(|i| mix(i as u64) as u32).collect(),
        "sorted" => (0..n).map(|i| i as u32).collect(),
        "reversed" => (0..n).map(|i| (n - 1 - i) as u32).collect(),
        "few-unique" => (0..n).map(|i| (mix(i as u64) % 16) as u32).collect(),
        _ => protocol::fail("--dist must be uniform, sorted, reversed, few-unique or strings"),
    }
}

fn strings(n: usize) -> Vec<String> {
    (0..n as u64)
        .map(|i| {
            let len = 8 + mix(i) % 17;
            (0..len).map(|j| (b'a' + (mix(i * 64 + j + 1) % 26) as u8) as char).collect()
        })
        .collect()
}

fn require_sorted<T: Ord>(v: &[T]) {
    if !v.windows(2).all(|w| w[0] <= w[1]) {
        protocol::fail("output is not sorted");
    }
}

// The checksums of algo_common.hpp, 53 bits.
fn checksum_keys(v: &[u32]) -> i64 {
    require_sorted(v);
    let h = v.iter().enumerate().fold(0u64, |h, (i, &x)| h.wrapping_add((x as u64).wrapping_mul(i as u64 + 1)));
    (h >> 11) as i64
}

fn checksum_strings(v: &[String]) -> i64 {
    require_sorted(v);
    let mut h: u64 = 0xcbf29ce484222325;
    for s in v {
        for &c in s.as_bytes() {
            h = (h ^ c as u64).wrapping_mul(0x100000001b3);
        }
        h = h.wrapping_mul(0x100000001b3);
    }
    (h >> 11) as i64
}

fn main() {
    let mut args = protocol::Args::parse();
    let dist = args.get_string("dist", "uniform");
    let n = args.get("n", 10_000_000) as usize;
    let stable = args.get("stable", 0) != 0;
    let workers = args.get("workers", 2);
    let (warmup, reps) = (args.get("warmup", 1), args.get("reps", 3));
    args.finish();

    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers as usize)
        .build()
        .unwrap_or_else(|e| protocol::fail(&format!("thread pool: {e}")));
    if dist == "strings" {
        let input = strings(n);
        // Each repetition copies the input into the previous repetition's
        // sorted output (String::clone_from reuses each string's buffer), as
        // the C++ programs' `v = input` does: the characters of the longer
        // strings then lie scattered in memory on both sides. A fresh clone
        // would lay them out in order for Rayon only, which alone moved the
        // ratio 1.3-1.8x (bench/results/algorithms/sort-leaf/strings-comparisons.md).
        let last = std::cell::RefCell::new(Vec::<String>::new());
        protocol::measure_and_report_with_setup(
            warmup,
            reps,
            || {
                let mut v = last.take();
                v.clone_from(&input);
                v
            },
            |mut v| {
                pool.install(|| if stable { v.par_sort() } else { v.par_sort_unstable() });
                v
            },
            |v| {
                let sum = checksum_strings(&v);
                *last.borrow_mut() = v;
                sum
            },
        );
    } else {
        let input = keys(&dist, n);
        protocol::measure_and_report_with_setup(
            warmup,
            reps,
            || input.clone(),
            |mut v| {
                pool.install(|| if stable { v.par_sort() } else { v.par_sort_unstable() });
                v
            },
            |v| checksum_keys(&v),
        );
    }
}
