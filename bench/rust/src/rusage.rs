// Process CPU time (user + sys) via getrusage(RUSAGE_SELF), declared by hand to keep the
// peers free of dependencies other than rayon. Layout of `struct rusage` on 64-bit Linux.

#[repr(C)]
struct Timeval {
    sec: i64,
    usec: i64,
}

#[repr(C)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    rest: [i64; 14],
}

extern "C" {
    fn getrusage(who: i32, usage: *mut Rusage) -> i32;
}

pub fn cpu_seconds() -> f64 {
    let mut ru = Rusage {
        utime: Timeval { sec: 0, usec: 0 },
        stime: Timeval { sec: 0, usec: 0 },
        rest: [0; 14],
    };
    // SAFETY: `ru` is a valid, writable struct rusage; RUSAGE_SELF = 0.
    unsafe { getrusage(0, &mut ru) };
    (ru.utime.sec + ru.stime.sec) as f64 + (ru.utime.usec + ru.stime.usec) as f64 * 1e-6
}
