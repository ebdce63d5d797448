//! Whether a benchmark runs for real (`cargo bench`, which passes `--bench`) or as a smoke test (`cargo test
//! --benches`, which passes nothing, or `--smoke` by hand): tiny sizes, nothing timed that matters.

#![allow(dead_code)]

/// The flags of a hand-written benchmark that say how it was started (flattened into its own arguments).
#[derive(clap::Args, Debug, Clone)]
pub struct Mode {
    /// Smoke mode: tiny sizes (what `cargo test --benches` runs).
    #[arg(long)]
    smoke: bool,
    /// Passed by `cargo bench`; without it (as under `cargo test --benches`) the smoke version runs.
    #[arg(long, hide = true)]
    bench: bool,
    /// Passed by `cargo test` to some harnesses.
    #[arg(long, hide = true)]
    test: bool,
}

impl Mode {
    pub fn smoke(&self) -> bool {
        self.smoke || self.test || !self.bench
    }
}

/// The same rule for a criterion benchmark, which parses its own arguments.
pub fn smoke_run() -> bool {
    !std::env::args().any(|a| a == "--bench")
}
