//! The PostgreSQL server's share of a run (`--backend postgres`): its statements,
//! transactions, WAL bytes and CPU between the bench's open and its close, read from the
//! server's own statistics ([`ServerProbe`]) and, when the server runs on this machine, its
//! processes' CPU in `/proc`. Start the server with `pg_stat_statements` loaded to count
//! statements (`TASKHUB_TEST_POSTGRES_SERVER_OPTIONS='-c
//! shared_preload_libraries=pg_stat_statements' scripts/with-postgres.sh …`).
//!
//! The reading at the end is taken once the store is closed and its connections have reported
//! their transactions; the figures include everything the workers did meanwhile (polls, lease
//! renewals), as the server saw it.

use std::time::Duration;

use taskhub_backends::BackendConfig;
use taskhub_postgres::{PostgresBackend, ServerProbe, ServerStats};

use crate::procstats;
use crate::report::{round3, Record};

/// A reading at the start of a run.
pub struct ServerStart {
    probe: ServerProbe,
    stats: ServerStats,
    cpu: Option<Duration>,
}

/// What the server did between the start and the end.
#[derive(Debug, Clone, Copy)]
pub struct ServerUse {
    /// Its counters' growth.
    pub stats: ServerStats,
    /// Its processes' CPU (the postmaster and its children), if it runs on this machine.
    pub cpu: Option<Duration>,
}

/// A first reading, if the backend is PostgreSQL (`None` otherwise, or if the server cannot
/// be read: the run goes on without the figures, saying so).
pub async fn start(backend: &str, config: &BackendConfig) -> Option<ServerStart> {
    if backend != "postgres" {
        return None;
    }
    let probe = PostgresBackend::options_from(config)
        .ok()
        .and_then(|o| ServerProbe::new(&o).ok())?;
    if !probe.enable_statement_counts().await.unwrap_or(false) {
        eprintln!("taskhub-bench: the server does not count statements (load pg_stat_statements)");
    }
    match probe.read().await {
        Ok(stats) => Some(ServerStart {
            cpu: stats.postmaster_pid.and_then(procstats::cpu_with_children),
            probe,
            stats,
        }),
        Err(e) => {
            eprintln!("taskhub-bench: cannot read the server's statistics: {e}");
            None
        }
    }
}

impl ServerStart {
    /// The second reading, once the store's connections have gone, or else once each has
    /// been idle long enough to have reported its statistics (a backend reports at most every
    /// second, and an idle one within 10 s: `PGSTAT_IDLE_INTERVAL`).
    pub async fn end(self) -> Option<ServerUse> {
        for _ in 0..55 {
            match self.probe.connections_of_this_process().await {
                Ok(0) | Err(_) => break,
                Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let now = self.probe.read().await.ok()?;
        let cpu = now
            .postmaster_pid
            .and_then(procstats::cpu_with_children)
            .zip(self.cpu)
            .map(|(b, a)| b.saturating_sub(a));
        Some(ServerUse {
            stats: now.since(&self.stats),
            cpu,
        })
    }
}

impl Record {
    /// Adds the server's figures per `unit` (`orchestration`) over `n` units, and its CPU
    /// against this process's (`runtime_cpu`).
    pub fn server(
        self,
        server: Option<ServerUse>,
        unit: &str,
        n: u64,
        runtime_cpu: Option<Duration>,
    ) -> Self {
        let Some(s) = server else { return self };
        let per = |x: u64| round3(x as f64 / n.max(1) as f64);
        let mut record = self.extra(
            &format!("pg_transactions_per_{unit}"),
            per(s.stats.transactions),
        );
        if let Some(st) = s.stats.statements {
            record = record.extra(&format!("pg_statements_per_{unit}"), per(st));
        }
        if let Some(wal) = s.stats.wal_bytes {
            record = record.extra(&format!("pg_wal_bytes_per_{unit}"), per(wal));
        }
        if let Some(cpu) = s.cpu {
            record = record.extra(
                &format!("pg_server_cpu_us_per_{unit}"),
                round3(cpu.as_micros() as f64 / n.max(1) as f64),
            );
            if let Some(own) = runtime_cpu.filter(|c| !c.is_zero()) {
                record = record.extra(
                    "pg_server_cpu_over_runtime_cpu",
                    round3(cpu.as_secs_f64() / own.as_secs_f64()),
                );
            }
        }
        record
    }
}
