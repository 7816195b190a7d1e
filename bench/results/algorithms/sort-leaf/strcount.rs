// The Rust side of strcount.cpp and strlayout.cpp: comparisons of Rayon's par_sort_unstable_by
// (and of std's sort_unstable_by) on the suite's 10^6 strings, counted by the comparator; then,
// with a repetition count, the CPU time of par_sort_unstable on a fresh clone() per repetition
// (REUSE=1: clone_from into the last sorted output, the C++ programs' copy-assignment; LOC=1:
// print the share of strings whose bytes follow the previous string's within 256 bytes).
// Build: a crate depending on rayon = "1" (the peers' Cargo.lock: 1.12) with this as src/main.rs;
// run with RAYON_NUM_THREADS=1 [COUNT=1] ./target/release/NAME [n] [reps].
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

#[repr(C)]
struct Timespec {
    s: i64,
    ns: i64,
}
extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}
fn cpu_ms() -> f64 {
    let mut ts = Timespec { s: 0, ns: 0 };
    unsafe { clock_gettime(2, &mut ts) }; // CLOCK_PROCESS_CPUTIME_ID
    ts.s as f64 * 1e3 + ts.ns as f64 / 1e6
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

// As bench/rust/src/bin/sort.rs and algo_common.hpp.
fn strings(n: usize) -> Vec<String> {
    (0..n as u64)
        .map(|i| {
            let len = 8 + mix(i) % 17;
            (0..len).map(|j| (b'a' + (mix(i * 64 + j + 1) % 26) as u8) as char).collect()
        })
        .collect()
}

fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let reps: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(0);
    let input = strings(n);
    if std::env::var("COUNT").is_ok() {
        let c = AtomicU64::new(0);
        let mut v = input.clone();
        v.par_sort_unstable_by(|a, b| {
            c.fetch_add(1, Ordering::Relaxed);
            a.cmp(b)
        });
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        println!("rayon par_sort_unstable_by comparisons {}", c.swap(0, Ordering::Relaxed));
        let mut v = input.clone();
        v.sort_unstable_by(|a, b| {
            c.fetch_add(1, Ordering::Relaxed);
            a.cmp(b)
        });
        println!("std sort_unstable_by       comparisons {}", c.load(Ordering::Relaxed));
    }
    let reuse = std::env::var("REUSE").is_ok();
    let mut t = Vec::new();
    let mut v: Vec<String> = Vec::new();
    for _ in 0..reps {
        if reuse {
            v.clone_from(&input);
        } else {
            drop(std::mem::take(&mut v)); // the last output is freed first, as the peer's harness does
            v = input.clone();
        }
        if std::env::var("LOC").is_ok() {
            let (mut near, mut prev) = (0usize, 0usize);
            for x in &v {
                let d = x.as_ptr() as usize;
                if prev != 0 && d > prev && d - prev < 256 {
                    near += 1;
                }
                prev = d;
            }
            print!("[locality {:.2}] ", near as f64 / v.len() as f64);
        }
        let s = cpu_ms();
        v.par_sort_unstable();
        t.push(cpu_ms() - s);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }
    if reps > 0 {
        t.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("rayon: {:.1?}  median {:.1} cpu-ms", t, t[t.len() / 2]);
    }
}
