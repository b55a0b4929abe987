//! `AzureStore`: one task hub on one storage account, and how its objects are named.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use taskhub_storage::{Clock, StorageError, StorageResult, TaskHubStore};

use crate::blobs::{missing, Container};
use crate::connection::{HubName, StorageAccount};
use crate::error::AzureError;
use crate::http::Http;
use crate::tables::{Row, Tables};

/// A string property longer than this (in UTF-8 bytes) goes to a blob instead (a table
/// property holds at most 64 KiB of UTF-16, i.e. 32 Ki characters).
pub(crate) const INLINE_LIMIT: usize = 30_000;

/// The names of a hub's storage objects, as the original names them.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// Lower-cased hub name: prefix of queues and the container.
    pub lower: String,
    pub history: String,
    pub instances: String,
    pub partitions: String,
    pub dead_letters: String,
}

impl Names {
    pub(crate) fn for_hub(hub: &HubName) -> Self {
        let name = hub.as_str();
        Self {
            lower: hub.lower(),
            history: format!("{name}History"),
            instances: format!("{name}Instances"),
            partitions: format!("{name}Partitions"),
            dead_letters: format!("{name}DeadLetters"),
        }
    }
}

/// What [`AzureStore::open`] needs.
#[derive(Clone)]
pub struct AzureOptions {
    /// The account (from a connection string).
    pub account: StorageAccount,
    /// The task hub.
    pub hub: HubName,
    /// The clock for timestamps the store assigns (dead letters). Visibility timeouts and
    /// enqueue times are the service's own.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for AzureOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureOptions")
            .field("account", &self.account)
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

/// The task hub on Azure Storage: control queues `<hub>-control-NN`, `<hub>-workitems`,
/// tables `<Hub>History`, `<Hub>Instances`, `<Hub>Partitions`, `<Hub>DeadLetters`, and the
/// blob container `<hub>-largemessages`.
pub struct AzureStore {
    pub(crate) http: Http,
    pub(crate) tables: Tables,
    /// The Table service for the lease manager's calls: each bounded by
    /// [`LEASE_REQUEST_TIMEOUT`](crate::http::LEASE_REQUEST_TIMEOUT).
    pub(crate) lease_tables: Tables,
    pub(crate) blobs: Container,
    pub(crate) names: Names,
    pub(crate) hub: HubName,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) counter: AtomicU64,
    /// Checkpoints whose step 5 (clearing the pending outbox) failed.
    pub(crate) outbox_clear_failures: AtomicU64,
    /// Step-5 failures still to inject (feature `testing`).
    #[cfg(feature = "testing")]
    pub(crate) inject_clear_failures: AtomicU64,
    /// Post-commit clean-ups still to skip (feature `testing`).
    #[cfg(feature = "testing")]
    pub(crate) inject_skip_collections: AtomicU64,
}

impl std::fmt::Debug for AzureStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureStore")
            .field("names", &self.names)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl AzureStore {
    /// Opens an existing hub, creating nothing: the hub exists once its blob container (the
    /// last object [`create`](Self::create) makes) does. The first request fails within
    /// seconds when the endpoint does not answer.
    ///
    /// # Errors
    /// [`AzureError::HubNotFound`] for a hub that does not exist (nothing was created),
    /// [`AzureError::HubNameCase`] if the hub was created under a name that differs only in
    /// case, [`AzureError::Open`] with the storage error (a wrong key, no answer).
    pub async fn open(options: AzureOptions) -> Result<Self, AzureError> {
        let store = Self::new(options)?;
        match store.blobs.hub_name().await? {
            None => Err(AzureError::HubNotFound {
                name: store.hub.to_string(),
            }),
            Some(existing) => {
                store.check_case(&existing)?;
                store.check_layout().await?;
                Ok(store)
            }
        }
    }

    /// Opens a hub, creating its tables and blob container if missing (queues are created on
    /// first send); the explicit create path of workers and tests. Names still being deleted
    /// (a hub deleted and re-created at once) are waited for.
    ///
    /// # Errors
    /// [`AzureError::HubNameCase`] if a hub whose name differs only in case exists (nothing
    /// was created), [`AzureError::Open`] with the storage error.
    pub async fn create(options: AzureOptions) -> Result<Self, AzureError> {
        let store = Self::new(options)?;
        if let Some(existing) = store.blobs.hub_name().await? {
            store.check_case(&existing)?;
        }
        for table in [
            &store.names.history,
            &store.names.instances,
            &store.names.partitions,
            &store.names.dead_letters,
        ] {
            store.tables.create_table(table).await?;
        }
        if !store.blobs.create(store.hub.as_str()).await? {
            // Another creator raced us: its name must be ours.
            if let Some(existing) = store.blobs.hub_name().await? {
                store.check_case(&existing)?;
            }
        }
        store.check_layout().await?;
        Ok(store)
    }

    fn new(options: AzureOptions) -> Result<Self, AzureError> {
        let names = Names::for_hub(&options.hub);
        let http = Http::new(options.account, options.clock.clone())?;
        Ok(Self {
            tables: Tables { http: http.clone() },
            lease_tables: Tables {
                http: http.with_patience(crate::http::LEASE),
            },
            blobs: Container {
                http: http.clone(),
                name: format!("{}-largemessages", names.lower),
            },
            http,
            names,
            hub: options.hub,
            clock: options.clock,
            counter: AtomicU64::new(0),
            outbox_clear_failures: AtomicU64::new(0),
            #[cfg(feature = "testing")]
            inject_clear_failures: AtomicU64::new(0),
            #[cfg(feature = "testing")]
            inject_skip_collections: AtomicU64::new(0),
        })
    }

    /// A hub records the name it was created with; another case of it is an error (an older
    /// hub that recorded none is taken as is).
    fn check_case(&self, existing: &str) -> Result<(), AzureError> {
        if existing.is_empty() || existing == self.hub.as_str() {
            Ok(())
        } else {
            Err(AzureError::HubNameCase {
                name: self.hub.to_string(),
                existing: existing.to_owned(),
            })
        }
    }

    /// The hub's name.
    #[must_use]
    pub fn hub_name(&self) -> &HubName {
        &self.hub
    }

    /// The storage operations this store has sent so far, by kind (every attempt counts).
    pub fn op_counts(&self) -> crate::counters::OpCounts {
        self.http.counters.snapshot()
    }

    /// How many checkpoints could not clear their pending outbox (step 5) since the store was
    /// opened: each such outbox is re-sent by the instance's next loader (and de-duplicated by
    /// its receivers).
    pub fn outbox_clear_failures(&self) -> u64 {
        self.outbox_clear_failures.load(Ordering::Relaxed)
    }

    /// True if this step-5 attempt must fail (injected by a test, feature `testing`).
    pub(crate) fn injected_clear_failure(&self) -> bool {
        #[cfg(feature = "testing")]
        {
            self.inject_clear_failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        }
        #[cfg(not(feature = "testing"))]
        {
            false
        }
    }

    /// True if the clean-up after this commit must be skipped (injected by a test, feature
    /// `testing`).
    pub(crate) fn injected_skip_collection(&self) -> bool {
        #[cfg(feature = "testing")]
        {
            self.inject_skip_collections
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        }
        #[cfg(not(feature = "testing"))]
        {
            false
        }
    }

    /// A process-unique number (orders dead letters written in one millisecond).
    pub(crate) fn next_counter(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed)
    }

    /// A string property for `value`: inline if short, else `(name)Blob` naming a blob with
    /// a fresh random name under `blob_prefix` (random, so a stale writer can never overwrite
    /// a blob a committed row names).
    pub(crate) async fn big_text(
        &self,
        name: &'static str,
        value: &str,
        blob_prefix: &str,
    ) -> StorageResult<Vec<(String, String)>> {
        if value.len() <= INLINE_LIMIT {
            return Ok(vec![(name.to_owned(), value.to_owned())]);
        }
        let blob = format!("{blob_prefix}{}", uuid::Uuid::new_v4().simple());
        self.blobs.put(&blob, value.as_bytes().to_vec()).await?;
        Ok(vec![
            (name.to_owned(), String::new()),
            (format!("{name}Blob"), blob),
        ])
    }

    /// Reads a property written by [`big_text`](Self::big_text).
    pub(crate) async fn read_big(&self, row: &Row, name: &str) -> StorageResult<String> {
        let blob = row.str(&format!("{name}Blob"));
        if blob.is_empty() {
            return Ok(row.str(name).to_owned());
        }
        let bytes = self.blobs.get(blob).await?.ok_or_else(|| missing(blob))?;
        String::from_utf8(bytes).map_err(|_| StorageError::Corrupt {
            what: format!("blob {blob}"),
            detail: "not UTF-8".to_owned(),
        })
    }
}

/// Adds string properties to an entity.
pub(crate) fn extend(e: &mut crate::tables::Entity, props: Vec<(String, String)>) {
    for (k, v) in props {
        e.insert(k, serde_json::Value::String(v));
    }
}

/// A number as a property that sorts in numeric order.
pub(crate) fn num(n: u64) -> String {
    format!("{n:020}")
}

/// Parses [`num`]; `Corrupt` if it is not a number.
pub(crate) fn parse_num(text: &str, what: &str) -> StorageResult<u64> {
    text.parse().map_err(|_| StorageError::Corrupt {
        what: what.to_owned(),
        detail: format!("'{text}' is not a number"),
    })
}

impl TaskHubStore for AzureStore {
    fn backend_name(&self) -> &'static str {
        "azure"
    }

    fn owns_time(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_named_as_the_original_names_them() {
        let names = Names::for_hub(&HubName::new("MyHub1").unwrap());
        assert_eq!(names.lower, "myhub1");
        assert_eq!(names.history, "MyHub1History");
        assert_eq!(names.instances, "MyHub1Instances");
        assert_eq!(names.partitions, "MyHub1Partitions");
        assert_eq!(names.dead_letters, "MyHub1DeadLetters");
    }
}
