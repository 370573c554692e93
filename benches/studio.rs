//! Studio latency benchmarks (filled in below).
fn main() {}
