//! The relay benchmark's `--capacity`: the highest rate of turn starts a second a server answers within a limit on
//! the first token's added p99, turns arriving on a schedule (an open loop).

use std::time::{Duration, Instant};

use crate::stats::{self, fmt};
use crate::{cpu_time, direct_stream, make_threads, quire_stream, Account, Timing};

/// The capacity of one server (`--capacity`): the highest rate of turn starts per second, arriving on a schedule
/// whatever the server's answers (an open loop, as people arrive), at which the first token's added p99 stays
/// within the limit. Each turn is a conversation's first, answered in one delta, so the start is what is measured.
pub struct Capacity<'a> {
    pub client: &'a reqwest::Client,
    pub base: &'a str,
    pub upstream: &'a str,
    pub accounts: &'a [Account],
    pub seconds: f64,
    pub limit: Duration,
}

impl Capacity<'_> {
    /// Doubles the rate from 50 a second until a step misses the limit, then halves the interval between the last
    /// rate that held and the first that did not, to within 5%; `rates` given instead run those steps alone.
    pub async fn run(&self, pid: u32, rates: &[f64]) -> anyhow::Result<()> {
        println!(
            "{:>9} | {:>6} | {:>10} {:>10} | {:>10} {:>10} | {:>10} | {:>6} {:>9} | held",
            "starts/s", "turns", "ttft p50", "ttft p99", "direct p99", "+ttft p99", "late p99", "cpu", "cpu/turn"
        );
        let (mut held, mut missed): (f64, Option<f64>) = (0.0, None);
        let mut rate = rates.first().copied().unwrap_or(50.0);
        for step in 0.. {
            let ok = self.step(pid, rate).await?;
            if ok {
                held = held.max(rate);
            } else {
                missed = Some(missed.map_or(rate, |m: f64| m.min(rate)));
            }
            rate = match (rates.get(step + 1), missed) {
                (Some(&next), _) => next,
                _ if !rates.is_empty() => break,
                (None, None) if rate < 10_000.0 => rate * 2.0,
                (None, None) => break,
                (None, Some(missed)) if missed - held > (held * 0.05).max(2.0) => (held + missed) / 2.0,
                (None, Some(_)) => break,
            };
        }
        println!(
            "capacity: {held:.0} turn starts a second with the first token's added p99 <= {} (the first that missed: {})",
            fmt(self.limit),
            missed.map_or("none".to_string(), |m| format!("{m:.0}"))
        );
        Ok(())
    }

    /// One step: `rate` starts a second for `seconds`, first straight from the fake provider (the reference), then
    /// through the server, each in conversations of its own made beforehand. Whether the added p99 held.
    async fn step(&self, pid: u32, rate: f64) -> anyhow::Result<bool> {
        let turns = ((rate * self.seconds).round() as usize).max(2);
        let threads = make_threads(self.client, self.base, self.accounts, turns).await?;
        let direct = open_loop(rate, turns, {
            let (client, upstream) = (self.client.clone(), self.upstream.to_string());
            move |_| {
                let (client, upstream) = (client.clone(), upstream.clone());
                async move { direct_stream(&client, &upstream).await }
            }
        })
        .await?;
        let cpu_before = cpu_time(pid);
        let started = Instant::now();
        let through = open_loop(rate, turns, {
            let (client, base, accounts) = (self.client.clone(), self.base.to_string(), self.accounts.to_vec());
            move |i| {
                let (client, base) = (client.clone(), base.clone());
                let (account, thread) = (accounts[i % accounts.len()].clone(), threads[i].clone());
                async move { quire_stream(&client, &base, &account, &thread).await }
            }
        })
        .await?;
        let cpu = cpu_time(pid) - cpu_before;
        let share = cpu.as_secs_f64() / started.elapsed().as_secs_f64();
        let p = |v: &[Duration], q: f64| stats::rank(v, q);
        let added = p(&through.ttft, 99.0).saturating_sub(p(&direct.ttft, 99.0));
        let ok = through.failed == 0 && added <= self.limit;
        println!(
            "{rate:>9.0} | {turns:>6} | {:>10} {:>10} | {:>10} {:>10} | {:>10} | {:>5.0}% {:>9} | {}",
            fmt(p(&through.ttft, 50.0)),
            fmt(p(&through.ttft, 99.0)),
            fmt(p(&direct.ttft, 99.0)),
            fmt(added),
            fmt(p(&through.late, 99.0)),
            share * 100.0,
            fmt(cpu / turns as u32),
            if ok {
                "yes".to_string()
            } else if through.failed > 0 {
                format!("no ({} failed)", through.failed)
            } else {
                "no".to_string()
            }
        );
        Ok(ok)
    }
}

/// What an open-loop run measured: each turn's first token (sorted), how late the load client itself started
/// turns against their schedule (sorted: a check on the client), and the turns that failed.
struct OpenLoop {
    ttft: Vec<Duration>,
    late: Vec<Duration>,
    failed: usize,
}

/// Starts `turns` turns `1 / rate` seconds apart, each on its schedule whether or not the earlier ones answered.
async fn open_loop<F, Fut>(rate: f64, turns: usize, one: F) -> anyhow::Result<OpenLoop>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Timing>> + Send + 'static,
{
    let start = tokio::time::Instant::now() + Duration::from_millis(20);
    let mut tasks = Vec::with_capacity(turns);
    for i in 0..turns {
        let at = start + Duration::from_secs_f64(i as f64 / rate);
        let turn = one(i);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let late = at.elapsed();
            (late, turn.await)
        }));
    }
    let mut run = OpenLoop { ttft: Vec::new(), late: Vec::new(), failed: 0 };
    for task in tasks {
        let (late, timing) = task.await?;
        run.late.push(late);
        match timing {
            Ok(timing) if !timing.deltas.is_empty() => run.ttft.push(timing.deltas[0]),
            _ => run.failed += 1,
        }
    }
    run.ttft.sort_unstable();
    run.late.sort_unstable();
    if run.ttft.is_empty() {
        run.ttft.push(Duration::MAX);
    }
    Ok(run)
}
