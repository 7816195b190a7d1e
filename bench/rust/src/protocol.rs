// Workload protocol helpers (bench/README.md): `--key value` arguments, the in-process
// warm-up + timed repetitions, and the final `RESULT {...}` line.
use std::collections::HashMap;
use std::time::Instant;

use crate::rusage::cpu_seconds;

pub struct Args(HashMap<String, String>);

impl Args {
    pub fn parse() -> Args {
        let mut kv = HashMap::new();
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            let key = a
                .strip_prefix("--")
                .unwrap_or_else(|| fail(&format!("unexpected argument '{a}'")));
            match key.split_once('=') {
                Some((k, v)) => kv.insert(k.to_string(), v.to_string()),
                None => kv.insert(
                    key.to_string(),
                    it.next()
                        .unwrap_or_else(|| fail(&format!("missing value for --{key}"))),
                ),
            };
        }
        Args(kv)
    }

    /// Integer option `key`, or `default`; removes it so `finish` can reject leftovers.
    pub fn get(&mut self, key: &str, default: i64) -> i64 {
        match self.0.remove(key) {
            None => default,
            Some(v) => v
                .parse()
                .unwrap_or_else(|_| fail(&format!("--{key} needs an integer"))),
        }
    }

    /// String option `key`, or `default`; removes it like `get`.
    pub fn get_string(&mut self, key: &str, default: &str) -> String {
        self.0.remove(key).unwrap_or_else(|| default.to_string())
    }

    pub fn finish(&self) {
        if let Some(k) = self.0.keys().next() {
            fail(&format!("unknown option --{k}"));
        }
    }
}

pub fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// Runs `f` `warmup + reps` times, times the last `reps`, checks every answer is the same, and
/// prints the protocol's RESULT line.
pub fn measure_and_report<F: FnMut() -> i64>(warmup: i64, reps: i64, mut f: F) {
    measure_and_report_with_setup(warmup, reps, || (), |_| f(), |r| r);
}

/// `measure_and_report` for a region that needs untimed work around it: each repetition runs
/// `setup()` (untimed), then `f(setup's value)` (timed), then `answer(f's value)` (untimed).
pub fn measure_and_report_with_setup<S, T, Setup, F, Answer>(
    warmup: i64,
    reps: i64,
    mut setup: Setup,
    mut f: F,
    mut answer_of: Answer,
) where
    Setup: FnMut() -> S,
    F: FnMut(S) -> T,
    Answer: FnMut(T) -> i64,
{
    if reps < 1 {
        fail("--reps must be >= 1");
    }
    let (mut answer, mut walls, mut utils) = (None, Vec::new(), Vec::new());
    for i in 0..warmup + reps {
        let input = setup();
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let out = std::hint::black_box(f(input));
        let wall = t0.elapsed().as_secs_f64();
        let c1 = cpu_seconds();
        let r = answer_of(out);
        if answer.is_some_and(|a| a != r) {
            fail("answer changed between repetitions");
        }
        answer = Some(r);
        if i >= warmup {
            walls.push(wall);
            utils.push((c1 - c0) / wall);
        }
    }
    let best = walls.iter().cloned().fold(f64::INFINITY, f64::min);
    println!(
        "RESULT {{\"result\": {}, \"metrics\": {{\"region_s\": {:e}, \"region_s_min\": {:e}, \"run_util\": {:.4}}}}}",
        answer.unwrap(),
        median(&walls),
        best,
        median(&utils)
    );
}
