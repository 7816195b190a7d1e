use rayon::slice::ParallelSliceMut;
fn mix(mut z: u64) -> u64 { z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9); z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb); z ^ (z >> 31) }
fn cpu() -> f64 { let mut ts = libc::timespec{tv_sec:0,tv_nsec:0}; unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) }; ts.tv_sec as f64*1e3 + ts.tv_nsec as f64*1e-6 }
fn main() {
  let n = 1_000_000u64; let reps = 7;
  let input: Vec<String> = (0..n).map(|i| { let len = 8 + mix(i) % 17; (0..len).map(|j| (b'a' + (mix(i * 64 + j + 1) % 26) as u8) as char).collect() }).collect();
  let mode = std::env::args().nth(1).unwrap_or("reuse".into());
  let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
  let mut t = vec![]; let mut last: Vec<String> = Vec::new();
  for _ in 0..reps { let mut v = if mode=="reuse" { let mut v = std::mem::take(&mut last); v.clone_from(&input); v } else { input.clone() };
    let c = pool.install(|| { let c0=cpu(); v.par_sort_unstable(); cpu()-c0 });
    last = v; t.push(c); }
  t.sort_by(|a,b| a.partial_cmp(b).unwrap());
  println!("rayon strings {} cpu median {:.1} ms min {:.1}", mode, t[reps/2], t[0]);
}
