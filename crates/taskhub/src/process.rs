//! This process in the hub's process registry: announced with the schema version its build
//! writes, renewed every `process_heartbeat_interval` on the hub's clock, forgotten when it
//! stops cleanly. The heartbeat also tells when a newer build migrated the hub under this
//! process: the store answers `NewerSchema`, and [`Announced::schema_moved`] resolves, so
//! that the process stops taking work with one clear error (a worker does so by itself).

use std::time::Duration;

use taskhub_core::Timestamp;
use taskhub_storage::{
    ProcessAnnouncement, ProcessKind, ProcessRecord, StorageError, PROCESS_RECORD_RETENTION,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use crate::error::TaskhubError;
use crate::hub::TaskHub;

/// The build version processes announce (this crate's version).
pub const BUILD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A process's record in the hub's registry and the task that renews it. Dropping it stops
/// the heartbeat and leaves the record to go stale (as a crash would);
/// [`retire`](Self::retire) forgets it.
#[derive(Debug)]
pub struct Announced {
    hub: TaskHub,
    record: ProcessRecord,
    moved: watch::Receiver<Option<StorageError>>,
    task: JoinHandle<()>,
}

impl TaskHub {
    /// Announces this process in the hub's process registry as `kind` and starts renewing
    /// its heartbeat (see [`Announced`]).
    ///
    /// # Errors
    /// A storage error of the announcement (retryable ones are retried for up to the
    /// settings' `startup_busy_timeout`).
    pub async fn announce(&self, kind: ProcessKind) -> Result<Announced, TaskhubError> {
        let me = announcement(kind);
        let store = self.store().clone();
        let record = crate::startup::Retry {
            clock: self.clock().as_ref(),
            limit: self.settings().startup_busy_timeout,
            operation: "announcing the process in the hub's registry",
        }
        .run(|| {
            let store = store.clone();
            let me = me.clone();
            async move { store.announce_process(&me).await }
        })
        .await?;
        // The records of processes that died without forgetting theirs go once they are old.
        match self
            .forget_processes_older_than(PROCESS_RECORD_RETENTION)
            .await
        {
            Ok(gone) if !gone.is_empty() => {
                info!(
                    count = gone.len(),
                    "forgot the records of processes stale for a day or more"
                );
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "could not forget old process records"),
        }
        let (tx, moved) = watch::channel(None);
        // The beats are due at fixed points from now, however late the task starts.
        let origin = self.clock().monotonic();
        let task = tokio::spawn(heartbeat(self.clone(), me, origin, tx));
        Ok(Announced {
            hub: self.clone(),
            record,
            moved,
            task,
        })
    }
}

/// The hub's process records and the time they are judged by (see
/// [`TaskHub::processes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRegistry {
    /// Every record, ordered by ID.
    pub records: Vec<ProcessRecord>,
    /// "Now" by the clock the records' times come from.
    pub now: Timestamp,
}

impl TaskHub {
    /// Every process record, with "now" by the clock that wrote their times: the store's own
    /// when it owns time (a database server's), else the hub's. Liveness and age are judged
    /// against it, never against the caller's clock alone.
    ///
    /// # Errors
    /// A storage error of the listing or of reading the store's time.
    pub async fn processes(&self) -> Result<ProcessRegistry, TaskhubError> {
        let records = self.store().list_processes().await?;
        let now = self.registry_now().await?;
        Ok(ProcessRegistry { records, now })
    }

    /// Forgets the record `id`; true if it existed. A live process announces itself again
    /// at its next heartbeat.
    ///
    /// # Errors
    /// A storage error.
    pub async fn forget_process(&self, id: &str) -> Result<bool, TaskhubError> {
        Ok(self.store().forget_process(id).await?)
    }

    /// Forgets every record whose heartbeat is at least `age` old (by
    /// [`processes`](Self::processes)' clock); returns them.
    ///
    /// # Errors
    /// A storage error.
    pub async fn forget_processes_older_than(
        &self,
        age: Duration,
    ) -> Result<Vec<ProcessRecord>, TaskhubError> {
        let registry = self.processes().await?;
        let mut gone = Vec::new();
        for r in registry.records {
            if r.is_older_than(age, registry.now) && self.forget_process(&r.id).await? {
                gone.push(r);
            }
        }
        Ok(gone)
    }

    async fn registry_now(&self) -> Result<Timestamp, TaskhubError> {
        Ok(match self.store().server_now().await? {
            Some(now) => now,
            None => self.clock().now(),
        })
    }
}

impl Announced {
    /// The record as announced.
    #[must_use]
    pub fn record(&self) -> &ProcessRecord {
        &self.record
    }

    /// The `NewerSchema` error once a heartbeat found the hub migrated by a newer build.
    #[must_use]
    pub fn moved(&self) -> Option<StorageError> {
        self.moved.borrow().clone()
    }

    /// Resolves with the `NewerSchema` error once a heartbeat finds the hub migrated by a
    /// newer build (never, if that does not happen).
    pub async fn schema_moved(&self) -> StorageError {
        let mut moved = self.moved.clone();
        loop {
            if let Some(e) = moved.borrow_and_update().clone() {
                return e;
            }
            if moved.changed().await.is_err() {
                // The heartbeat ended without a move (aborted): nothing more will come.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Stops the heartbeat and removes the record (a clean stop).
    pub async fn retire(self) {
        self.task.abort();
        if let Err(e) = self.hub.store().forget_process(&self.record.id).await {
            warn!(process = %self.record.id, error = %e, "could not remove the process record; it goes stale");
        }
    }
}

impl Drop for Announced {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Renews the record until aborted, or until the hub's schema moved past this build's.
async fn heartbeat(
    hub: TaskHub,
    me: ProcessAnnouncement,
    origin: std::time::Duration,
    moved: watch::Sender<Option<StorageError>>,
) {
    let interval = hub.settings().process_heartbeat_interval;
    let clock = hub.clock().clone();
    let mut due = origin;
    loop {
        due += interval;
        clock.sleep(due.saturating_sub(clock.monotonic())).await;
        // After a pause, the next beat is an interval from now, not a burst of missed ones.
        due = due.max(clock.monotonic());
        match hub.store().heartbeat_process(&me.id).await {
            Ok(_) => {}
            // Forgotten (an operator's `workers processes --forget`, a cleared registry): announce again.
            Err(StorageError::NotFound { .. }) => {
                if let Err(e) = hub.store().announce_process(&me).await {
                    warn!(process = %me.id, error = %e, "could not announce the process again");
                }
            }
            Err(e @ StorageError::NewerSchema { .. }) => {
                error!(process = %me.id, error = %e, "the hub was migrated by a newer build: this process stops taking work");
                moved.send_replace(Some(e));
                return;
            }
            Err(e) => {
                warn!(process = %me.id, error = %e, "process heartbeat failed; retrying at the next one")
            }
        }
    }
}

/// What this process says about itself as `kind`.
fn announcement(kind: ProcessKind) -> ProcessAnnouncement {
    let host = host_name();
    let pid = std::process::id();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let safe_host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    ProcessAnnouncement {
        id: format!(
            "{kind}-{safe_host}-{pid}-{}",
            nonce.get(..8).unwrap_or(&nonce)
        ),
        kind,
        host,
        pid,
        build_version: BUILD_VERSION.to_owned(),
    }
}

/// The machine's name: `HOSTNAME`, else `/etc/hostname`, else `unknown`.
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}
