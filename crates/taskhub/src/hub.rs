//! A task hub: a store, a clock, settings and this process's wake-up signals.
//! [`TaskHub::open`] creates the hub in its store if needed and holds its partition count; the
//! hub encodes and sends the runtime's messages.

use std::sync::Arc;

use taskhub_core::{InstanceId, Message};
use taskhub_storage::{Clock, NewQueueMessage, QueueName, StorageError, SystemClock, TaskHubStore};

use crate::client::TaskHubClient;
use crate::codec;
use crate::error::TaskhubError;
use crate::settings::Settings;
use crate::signals::Signals;
use crate::startup::Retry;

pub(crate) struct HubInner {
    pub store: Arc<dyn TaskHubStore>,
    pub clock: Arc<dyn Clock>,
    pub settings: Settings,
    pub signals: Signals,
    pub partition_count: std::sync::atomic::AtomicU32,
    /// When the partition count was last read from storage (monotonic).
    pub count_checked_at: std::sync::Mutex<Option<std::time::Duration>>,
    /// When someone last looked at the hub's metrics or dashboard (queue sampling while
    /// watched, see `telemetry::watched`).
    pub watched_at: crate::telemetry::sampling::WatchedAt,
}

/// How often a process re-reads the partition count for new instances.
const COUNT_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// One task hub, opened on a backend. Cheap to clone; clients and workers made from the same
/// `TaskHub` share in-process wake-ups.
///
/// Open it on a store: the embedded SQLite backend (`taskhub-sqlite`) for a file several
/// processes may share, `taskhub_storage::memory::MemoryStore` for tests, or Azure Storage
/// (`taskhub-azure`). Opening creates the hub's tables and queues if they are missing.
///
/// ```
/// use std::sync::Arc;
/// use taskhub::{Settings, TaskHub};
/// use taskhub_sqlite::{SqliteOptions, SqliteStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = std::env::temp_dir().join(format!("taskhub-doc-hub-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(SqliteOptions::new(dir.join("taskhub.db")))?;
/// let settings = Settings {
///     partition_count: 8,
///     ..Settings::default()
/// };
/// let hub = TaskHub::open(Arc::new(store), settings).await?;
/// assert_eq!(hub.partition_count(), 8);
/// assert_eq!(hub.store().backend_name(), "sqlite");
/// // `hub.client()` starts and manages instances; `Worker::start(&hub, registry)` runs them.
/// # drop(hub);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct TaskHub {
    pub(crate) inner: Arc<HubInner>,
}

impl std::fmt::Debug for TaskHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHub")
            .field("backend", &self.inner.store.backend_name())
            .finish_non_exhaustive()
    }
}

impl TaskHub {
    /// Opens (creating if needed) the task hub on `store` with the system clock. A store that
    /// answers busy (or another retryable error) is retried with back-off for up to
    /// [`Settings::startup_busy_timeout`].
    ///
    /// # Errors
    /// Invalid settings, a storage error, or [`TaskhubError::StoreBusy`] if the store stayed
    /// busy for the whole `startup_busy_timeout`.
    pub async fn open(
        store: Arc<dyn TaskHubStore>,
        settings: Settings,
    ) -> Result<Self, TaskhubError> {
        Self::open_with_clock(store, settings, Arc::new(SystemClock::new())).await
    }

    /// Opens the task hub with an explicit clock (tests use a manual clock); retries a busy
    /// store as [`open`](Self::open) does, waiting on `clock`.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub async fn open_with_clock(
        store: Arc<dyn TaskHubStore>,
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, TaskhubError> {
        settings.validate()?;
        let retry = Retry {
            clock: clock.as_ref(),
            limit: settings.startup_busy_timeout,
            operation: "opening the task hub",
        };
        let info = retry
            .run(|| store.create_hub(settings.partition_count, clock.now()))
            .await?;
        if info.partition_count != settings.partition_count {
            tracing::warn!(
                configured = settings.partition_count,
                hub = info.partition_count,
                "partition_count is set to {} but the existing task hub has {} partitions; the hub's count stays in force (change it with `taskhub partitions resize {}`)",
                settings.partition_count,
                info.partition_count,
                settings.partition_count,
            );
        }
        let signals = Signals::new(clock.clone());
        // Another process's messages wake this process's pollers where the backend hears of
        // them (PostgreSQL's LISTEN/NOTIFY).
        store.watch_queues(signals.remote_waker());
        Ok(Self {
            inner: Arc::new(HubInner {
                store,
                signals,
                clock,
                settings,
                partition_count: std::sync::atomic::AtomicU32::new(info.partition_count),
                count_checked_at: std::sync::Mutex::new(None),
                watched_at: crate::telemetry::sampling::WatchedAt::default(),
            }),
        })
    }

    /// A client for starting and managing instances.
    #[must_use]
    pub fn client(&self) -> TaskHubClient {
        TaskHubClient::new(self.clone())
    }

    /// The settings the hub was opened with.
    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The backend.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn TaskHubStore> {
        &self.inner.store
    }

    /// The clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// This process's wake-ups: what a step rings once it has sent, committed or changed
    /// something a waiter here watches.
    pub(crate) fn signals(&self) -> &Signals {
        &self.inner.signals
    }

    /// The partition count for new instances (as stored in the hub).
    #[must_use]
    pub fn partition_count(&self) -> u32 {
        self.inner
            .partition_count
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records the partition count for new instances (after a live change).
    pub(crate) fn set_partition_count(&self, count: u32) {
        self.inner
            .partition_count
            .store(count, std::sync::atomic::Ordering::Relaxed);
    }

    /// The partition count for new instances, re-read from storage if the last read is older
    /// than a few seconds (another process may have changed it).
    pub(crate) async fn fresh_partition_count(&self) -> u32 {
        let now = self.inner.clock.monotonic();
        let stale = {
            let mut last = self
                .inner
                .count_checked_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let stale = last.is_none_or(|t| now.saturating_sub(t) >= COUNT_REFRESH);
            if stale {
                *last = Some(now);
            }
            stale
        };
        if stale {
            if let Ok(Some(info)) = self.inner.store.hub_info().await {
                self.set_partition_count(info.partition_count);
            }
        }
        self.partition_count()
    }

    /// The partition of an existing instance (from its row), or where a new one would go.
    pub(crate) async fn partition_of(&self, instance: &InstanceId) -> Result<u32, StorageError> {
        Ok(match self.inner.store.get_instance(instance).await? {
            Some(row) => row.partition,
            None => instance.partition(self.fresh_partition_count().await),
        })
    }

    /// Encodes a message for a queue: a body over `large_payload_threshold`, or over the
    /// largest message the store's queues accept (its reported limit), goes to the payload
    /// store.
    pub(crate) async fn encode(&self, message: &Message) -> Result<String, StorageError> {
        let store = self.inner.store.as_ref();
        let threshold = self
            .inner
            .settings
            .large_payload_threshold
            .min(store.max_message_bytes());
        codec::encode(store, message, threshold).await
    }

    /// Encodes a message as an outbound message of a checkpoint.
    pub(crate) async fn outbound(
        &self,
        queue: QueueName,
        message: &Message,
        delay: std::time::Duration,
    ) -> Result<taskhub_storage::OutboundMessage, StorageError> {
        let body = self.encode(message).await?;
        Ok(taskhub_storage::OutboundMessage {
            claim: None,
            queue,
            message: NewQueueMessage { body, delay },
        })
    }

    /// Sends one message now, waking this process's poller of that queue.
    pub(crate) async fn send(
        &self,
        queue: QueueName,
        message: &Message,
    ) -> Result<(), StorageError> {
        let body = self.encode(message).await?;
        self.inner
            .store
            .enqueue(
                queue,
                vec![NewQueueMessage {
                    body,
                    delay: std::time::Duration::ZERO,
                }],
            )
            .await?;
        self.inner.signals.enqueued(queue);
        Ok(())
    }
}
