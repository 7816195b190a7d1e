//! Shared plumbing of the Rust peers: the workload protocol of bench/README.md.
pub mod protocol;
mod rusage;
