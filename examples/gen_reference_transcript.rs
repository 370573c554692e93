//! Write a transcript shaped like the reference's own logs (see
//! `benches/support/reference_transcript.rs`), for profiling replay outside the bench:
//! `cargo run --release --example gen_reference_transcript -- EVENTS PATH`.

#[path = "../benches/support/reference_transcript.rs"]
mod reference_transcript;

fn main() {
    let mut args = std::env::args().skip(1);
    let events: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: gen_reference_transcript EVENTS PATH");
    let out = args
        .next()
        .expect("usage: gen_reference_transcript EVENTS PATH");
    reference_transcript::generate(events, std::path::Path::new(&out))
        .expect("write the transcript");
}
