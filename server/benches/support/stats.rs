//! Percentiles of timed samples.

#![allow(dead_code)]

use std::time::Duration;

/// p50, p95, p99 and the maximum of a set of samples.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub p50: Duration,
    pub p95: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Summary {
    /// Sorts the samples and takes the nearest-rank percentiles. Panics on no samples.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        Self {
            p50: rank(samples, 50.0),
            p95: rank(samples, 95.0),
            p99: rank(samples, 99.0),
            max: samples[samples.len() - 1],
        }
    }

    /// The four values as aligned columns.
    pub fn row(&self) -> String {
        format!("{:>10} {:>10} {:>10} {:>10}", fmt(self.p50), fmt(self.p95), fmt(self.p99), fmt(self.max))
    }
}

/// Nearest-rank percentile of sorted samples.
pub fn rank(sorted: &[Duration], percent: f64) -> Duration {
    let index = ((percent / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[index.clamp(1, sorted.len()) - 1]
}

/// A duration with a unit that keeps three significant digits.
pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.1} us")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// CPU time this process has used so far, all threads together (from /proc/self/task/*/schedstat, in
/// nanoseconds). Timing a query by it leaves out the time spent waiting for a core on a busy machine.
pub fn process_cpu() -> Duration {
    let mut total = 0u64;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let text = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            total += text.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Duration::from_nanos(total)
}
