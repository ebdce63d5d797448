//! Search over a large history: seeds messages over threads and users (real migrations and triggers, bulk
//! inserts in transactions), then times per-user searches of common, rare, phrase and prefix terms through
//! the real `Store::search` and prints p50/p95/p99 per kind.
//!
//!     cargo bench -p server --bench search -- --messages 1000000
//!     scripts/with-postgres cargo bench -p server --bench search -- --backend postgres
//!
//! `--db PATH` keeps the SQLite file; a later run with the same path skips the seeding, as does a run on a
//! PostgreSQL database seeded before (two builds compared on one `scripts/with-postgres` cluster). Without size
//! arguments under `cargo test --benches` it runs a tiny version (a few thousand messages) as a smoke test.

#[path = "support/mode.rs"]
mod mode;
#[path = "support/stats.rs"]
mod stats;
#[path = "support/text.rs"]
mod text;

use std::str::FromStr;
use std::time::{Duration, Instant};

use clap::Parser;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{Connection, Executor};
use store::{DynStore, NewUser};
use uuid::Uuid;

use stats::Summary;
use text::TextGen;

#[derive(Parser, Debug)]
struct Args {
    /// Messages to seed (split evenly over the threads).
    #[arg(long, default_value_t = 1_000_000)]
    messages: usize,
    #[arg(long, default_value_t = 1_000)]
    threads: usize,
    #[arg(long, default_value_t = 10)]
    users: usize,
    /// Timed searches per user, term and kind.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// `sqlite` or `postgres` (the URL from QUIRE_TEST_POSTGRES_URL or --postgres-url).
    #[arg(long, default_value = "sqlite")]
    backend: String,
    #[arg(long, env = "QUIRE_TEST_POSTGRES_URL")]
    postgres_url: Option<String>,
    /// SQLite file to use (and keep); a temporary one otherwise.
    #[arg(long)]
    db: Option<std::path::PathBuf>,
    #[command(flatten)]
    mode: mode::Mode,
}

/// Words of the Zipf vocabulary by rank: common ones (in a good share of all messages), rare ones (a handful
/// of messages per user).
const COMMON_RANKS: [usize; 3] = [20, 35, 60];
const RARE_RANKS: [usize; 3] = [6_000, 9_000, 14_000];

struct Seeded {
    store: DynStore,
    users: Vec<Uuid>,
    _dir: Option<tempfile::TempDir>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    if args.mode.smoke() {
        args.messages = 2_000;
        args.threads = 20;
        args.users = 2;
        args.repeat = 1;
    }
    let threads = args.threads.max(args.users);
    let per_thread = args.messages.div_ceil(threads);
    let gen = TextGen::new(42);
    let seeded = match args.backend.as_str() {
        "sqlite" => seed_sqlite(&args, threads, per_thread).await?,
        "postgres" => seed_postgres(&args, threads, per_thread).await?,
        other => anyhow::bail!("unknown backend {other}"),
    };

    let mut kinds: Vec<(&str, Vec<String>)> = vec![
        ("common", COMMON_RANKS.iter().map(|r| gen.word(*r).to_string()).collect()),
        ("rare", RARE_RANKS.iter().map(|r| gen.word(*r).to_string()).collect()),
        ("phrase", text::PHRASES[..3].iter().map(|p| format!("\"{p}\"")).collect()),
        ("prefix", vec!["pay*".into(), "req*".into(), "dro*".into()]),
        (
            "two words",
            vec![format!("{} {}", gen.word(20), gen.word(400)), format!("{} {}", gen.word(60), gen.word(900))],
        ),
    ];
    // Warm the caches once with every query, as a running server would be.
    for (_, queries) in &kinds {
        for q in queries {
            for user in &seeded.users {
                seeded.store.search(*user, q, 20, 0).await?;
            }
        }
    }
    println!(
        "search, {} backend: {} messages, {} threads, {} users; limit 20, first page with total",
        args.backend,
        per_thread * threads,
        threads,
        args.users
    );
    println!(
        "{:<10} {:>8} {:>10} {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10} {:>10} | hits per user (median)",
        "kind", "samples", "p50", "p95", "p99", "max", "cpu p50", "cpu p95", "cpu p99", "cpu max"
    );
    let mut all = Vec::new();
    let mut all_cpu = Vec::new();
    for (kind, queries) in kinds.iter_mut() {
        let mut samples = Vec::new();
        let mut cpu = Vec::new();
        let mut totals = Vec::new();
        for _ in 0..args.repeat {
            for q in queries.iter() {
                for user in &seeded.users {
                    let (start, cpu_start) = (Instant::now(), stats::process_cpu());
                    let page = seeded.store.search(*user, q, 20, 0).await?;
                    samples.push(start.elapsed());
                    cpu.push(stats::process_cpu().saturating_sub(cpu_start));
                    totals.push(page.total);
                    assert!(page.total == 0 || !page.hits.is_empty());
                }
            }
        }
        totals.sort_unstable();
        let summary = Summary::of(&mut samples);
        let cpu_summary = Summary::of(&mut cpu);
        println!(
            "{:<10} {:>8} {} | {} | {}",
            kind,
            samples.len(),
            summary.row(),
            cpu_summary.row(),
            totals[totals.len() / 2]
        );
        all.extend(samples);
        all_cpu.extend(cpu);
    }
    let summary = Summary::of(&mut all);
    println!("{:<10} {:>8} {} | {}", "all", all.len(), summary.row(), Summary::of(&mut all_cpu).row());
    Ok(())
}

async fn make_users(store: &DynStore, count: usize) -> anyhow::Result<Vec<Uuid>> {
    let mut users = Vec::new();
    for i in 0..count {
        let user = store
            .create_user(NewUser {
                email: format!("bench{i}@example.com"),
                password_hash: "not a hash".into(),
                display_name: format!("Bench {i}"),
            })
            .await?;
        users.push(user.id);
    }
    Ok(users)
}

/// `count` threads titled with a few words; thread `t` belongs to user `t % users`.
async fn make_threads(store: &DynStore, users: &[Uuid], count: usize, gen: &mut TextGen) -> anyhow::Result<Vec<Uuid>> {
    let mut threads = Vec::with_capacity(count);
    for t in 0..count {
        threads.push(store.create_thread(users[t % users.len()], &gen.text(3, 6), &[]).await?.id);
    }
    Ok(threads)
}

/// Thread `t` belongs to user `t % users`; message `s` (from 1) of a thread is the user's when odd.
fn role(seq: usize) -> &'static str {
    if seq % 2 == 1 {
        "user"
    } else {
        "assistant"
    }
}

const BATCH: usize = 100;
const ROWS_PER_TRANSACTION: usize = 20_000;

async fn seed_sqlite(args: &Args, threads: usize, per_thread: usize) -> anyhow::Result<Seeded> {
    let (dir, path) = match &args.db {
        Some(path) => (None, path.clone()),
        None => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("bench.db");
            (Some(dir), path)
        }
    };
    let url = format!("sqlite://{}", path.display());
    let store = store::connect(&url).await?;
    let mut conn = sqlx::SqliteConnection::connect_with(
        &SqliteConnectOptions::from_str(&url)?
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Off)
            .foreign_keys(true)
            // The store indexes what each commit queued while seeding goes on: the seeder waits its turn.
            .busy_timeout(Duration::from_secs(600)),
    )
    .await?;
    let existing: Vec<String> = sqlx::query_scalar("select id from users where email like 'bench%' order by email")
        .fetch_all(&mut conn)
        .await?;
    if !existing.is_empty() {
        eprintln!("reusing {}", path.display());
        let users = existing.iter().map(|s| Uuid::parse_str(s)).collect::<Result<_, _>>()?;
        return Ok(Seeded { store, users, _dir: dir });
    }
    let started = Instant::now();
    let users = make_users(&store, args.users).await?;
    let mut gen = TextGen::new(7);
    let thread_ids: Vec<String> =
        make_threads(&store, &users, threads, &mut gen).await?.iter().map(Uuid::to_string).collect();
    let users_text: Vec<String> = users.iter().map(Uuid::to_string).collect();
    let insert = |rows: usize| {
        format!(
            "insert into messages (id, thread_id, user_id, seq, role, content, status, created_at) values {}",
            vec!["(?, ?, ?, ?, ?, ?, 'complete', ?)"; rows].join(", ")
        )
    };
    let full_batch = insert(BATCH);
    let base = chrono::Utc::now().timestamp_micros() - (per_thread * threads) as i64 * 1_000;
    let mut in_tx = 0;
    conn.execute("begin").await?;
    let mut rows: Vec<(String, usize, usize)> = Vec::with_capacity(BATCH);
    // Messages are written in time order, round robin over threads, as conversations interleave.
    for seq in 1..=per_thread {
        for t in 0..threads {
            rows.push((gen.text(8, 60), t, seq));
            if rows.len() == BATCH || (seq == per_thread && t == threads - 1) {
                let sql = if rows.len() == BATCH { full_batch.clone() } else { insert(rows.len()) };
                let mut query = sqlx::query(&sql);
                for (content, t, seq) in rows.drain(..) {
                    let n = (seq - 1) * threads + t;
                    query = query
                        .bind(Uuid::now_v7().to_string())
                        .bind(&thread_ids[t])
                        .bind(&users_text[t % users.len()])
                        .bind(seq as i64)
                        .bind(role(seq))
                        .bind(content)
                        .bind(base + n as i64 * 1_000);
                }
                query.execute(&mut conn).await?;
                in_tx += BATCH;
                if in_tx >= ROWS_PER_TRANSACTION {
                    conn.execute("commit").await?;
                    conn.execute("begin").await?;
                    in_tx = 0;
                }
            }
        }
        if seq % 100 == 0 {
            eprint!("\rseeded {} messages ({:.0?})", seq * threads, started.elapsed());
        }
    }
    sqlx::query("update threads set message_count = ?, last_seq = ?")
        .bind(per_thread as i64)
        .bind(per_thread as i64)
        .execute(&mut conn)
        .await?;
    conn.execute("commit").await?;
    conn.execute("pragma wal_checkpoint(truncate)").await?;
    eprintln!(
        "\rseeded {} messages in {:.1?}; database {} MB",
        per_thread * threads,
        started.elapsed(),
        file_mb(&path)
    );
    Ok(Seeded { store, users, _dir: dir })
}

fn file_mb(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len() / 1_000_000).unwrap_or(0)
}

async fn seed_postgres(args: &Args, threads: usize, per_thread: usize) -> anyhow::Result<Seeded> {
    let url =
        args.postgres_url.clone().ok_or_else(|| anyhow::anyhow!("--backend postgres needs QUIRE_TEST_POSTGRES_URL"))?;
    let store = store::connect(&url).await?;
    let mut conn = sqlx::PgConnection::connect(&url).await?;
    let existing: Vec<Uuid> = sqlx::query_scalar("select id from users where email like 'bench%' order by email")
        .fetch_all(&mut conn)
        .await?;
    if !existing.is_empty() {
        eprintln!("reusing the database's seeded messages");
        return Ok(Seeded { store, users: existing, _dir: None });
    }
    let started = Instant::now();
    let users = make_users(&store, args.users).await?;
    let mut gen = TextGen::new(7);
    let thread_ids = make_threads(&store, &users, threads, &mut gen).await?;
    let base = chrono::Utc::now() - chrono::Duration::milliseconds((per_thread * threads) as i64);
    const PG_BATCH: usize = 5_000;
    let mut columns = PgColumns::default();
    let mut tx = conn.begin().await?;
    let mut in_tx = 0;
    for seq in 1..=per_thread {
        for t in 0..threads {
            let n = (seq - 1) * threads + t;
            columns.id.push(Uuid::now_v7());
            columns.thread.push(thread_ids[t]);
            columns.user.push(users[t % users.len()]);
            columns.seq.push(seq as i64);
            columns.role.push(role(seq).into());
            columns.content.push(gen.text(8, 60));
            columns.created.push(base + chrono::Duration::milliseconds(n as i64));
            if columns.id.len() == PG_BATCH || (seq == per_thread && t == threads - 1) {
                let batch = std::mem::take(&mut columns);
                in_tx += batch.id.len();
                sqlx::query(
                    "insert into messages (id, thread_id, user_id, seq, role, content, status, created_at)
                     select id, thread_id, user_id, seq, role, content, 'complete', created_at
                     from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int8[], $5::text[], $6::text[], $7::timestamptz[])
                          as r(id, thread_id, user_id, seq, role, content, created_at)",
                )
                .bind(batch.id)
                .bind(batch.thread)
                .bind(batch.user)
                .bind(batch.seq)
                .bind(batch.role)
                .bind(batch.content)
                .bind(batch.created)
                .execute(&mut *tx)
                .await?;
                if in_tx >= ROWS_PER_TRANSACTION * 5 {
                    tx.commit().await?;
                    tx = conn.begin().await?;
                    in_tx = 0;
                }
            }
        }
        if seq % 100 == 0 {
            eprint!("\rseeded {} messages ({:.0?})", seq * threads, started.elapsed());
        }
    }
    sqlx::query("update threads set message_count = $1, last_seq = $1")
        .bind(per_thread as i64)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    // What autovacuum would have done by the time such a history exists.
    conn.execute("vacuum analyze").await?;
    eprintln!("\rseeded {} messages in {:.1?}", per_thread * threads, started.elapsed());
    Ok(Seeded { store, users, _dir: None })
}

#[derive(Default)]
struct PgColumns {
    id: Vec<Uuid>,
    thread: Vec<Uuid>,
    user: Vec<Uuid>,
    seq: Vec<i64>,
    role: Vec<String>,
    content: Vec<String>,
    created: Vec<chrono::DateTime<chrono::Utc>>,
}
