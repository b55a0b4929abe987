//! Taskhub on Azure Storage: the storage seam ([`taskhub_storage::TaskHubStore`]) on queues,
//! tables and blobs, with the layout of the original DTFx Azure Storage provider.
//!
//! Open an existing hub with [`AzureStore::open`] (`AzureOptions { account, hub, clock }`;
//! it creates nothing) or create one with [`AzureStore::create`] (the explicit create path
//! of workers, the demo, a start and tests), from a [`StorageAccount`] (parsed from a
//! connection string, `UseDevelopmentStorage=true` for Azurite, or an account name with an
//! Entra ID [`Credential`]; secrets redacted in `Debug`) and a validated [`HubName`] (the
//! original's rule). Or go through the plug-in, [`AzureBackend`]. See `docs/AZURE.md` for the
//! layout and what the checkpoint guarantees without cross-object transactions.
//!
//! Requests are raw REST over HTTP/1.1 or HTTPS (`tls.rs`: rustls with the ring provider
//! and the Mozilla roots), signed with our own Shared Key signing (`signing.rs`) or an Entra
//! ID bearer token ([`credential`], `token.rs`: a client secret or the managed identity,
//! cached and refreshed before expiry); `http.rs` sends one request, retried on its policy
//! within its patience (`taskhub_storage::backoff`); `tables.rs` is a small Table client
//! (batches with every operation's status checked, continuation tokens).
//!
//! # Files
//!
//! Every backend crate names its files by role, the same way: `store.rs` (the store),
//! `options.rs` (the options struct and its `set()`; the seam layers the sources: the
//! `[azure]` table, `TASKHUB_AZURE_*`, the older top-level `azure_<name>` keys),
//! `backend.rs` (the plug-in: `Backend` and its `HubLocation`; one error line per failure
//! naming the setting, [`backend::START_AZURITE`]), `testing.rs` (test hooks, feature
//! `testing`), `connection.rs` and `credential.rs` (how to reach the account: connection
//! strings, endpoints, hub names; credentials), and one file per seam object: `queues.rs`,
//! `history.rs`, `instances.rs`, `partitions.rs`, `payloads.rs`, `dead_letters.rs`,
//! `processes.rs`, `checkpoint.rs`, `clear.rs` (Clear Messages on every queue, batched
//! deletes of every History, Instances and DeadLetters row, every blob; the Partitions table
//! and the container stay). Azure's own: [`admin`] (every table, queue and container of an
//! account), [`counters`], `blobs.rs`, `envelope.rs`, `row_etag.rs`, `date.rs`, `xml.rs`,
//! and [`error`], the crate's own error type. Tests run on Azurite
//! (`scripts/with-azurite.sh`).
//!
//! Depends on taskhub-core, taskhub-storage (feature `tls`: rustls and the web PKI roots),
//! async-trait, futures-util, serde, serde_json, thiserror, toml, uuid, tokio, hyper and
//! hyper-util, hyper-rustls with rustls (ring), http-body-util, bytes, hmac, sha2, base64, httpdate, percent-encoding,
//! quick-xml, tracing.
//!
//! # The condition of each write
//!
//! A write is conditional exactly where two writers could disagree; where a name or key no
//! other writer uses makes the write safe, it is unconditional (and so safe to re-send).
//!
//! | write | condition | why |
//! |---|---|---|
//! | History commit: the sentinel and the last event rows, one entity-group batch | sentinel `If-Match` the loaded ETag; insert (fails if it exists) for a first history | one linear history per instance: of two writers from one loaded history only one commits. A refusal (or a transient error) is read back: the sentinel's `Commit` marker tells whether this checkpoint's first attempt landed |
//! | event rows written ahead of the commit | none (insert-or-replace) | their keys carry a fresh token no committed row uses; invisible until the commit names them |
//! | clearing the outbox (checkpoint step 5), a merge | `If-Match` the ETag of step 1 | never clears a later checkpoint's outbox; read back like the commit |
//! | deleting an earlier generation's rows (after a commit, or owed, in the next one) | `If-Match: *` | rows below the sentinel's generation are no one's; a row already gone fails its batch, which is then deleted row by row |
//! | purge of a history (`delete_history`) | `If-Match: *` | the runtime purges finished instances only |
//! | instance row | `Expect::Any`: insert-or-replace; `Expect::Absent`: insert; `Expect::ETag`: `If-Match`; `Expect::AbsentOrPending`: a read, then insert or `If-Match` the Pending row read | the runtime chooses per write (`taskhub_storage::Expect`); a refusal is read back: the stored row equal to the one written means a re-sent copy of a write that landed |
//! | instance row delete | `If-Match: *` (`delete_instance`) or the row's ETag (`delete_instance_if`) | as the caller asks |
//! | partition lease rows | `If-Match` the row's ETag; insert for a new row | leases are ETag-conditional rows (the table partitioning design) |
//! | hub creation (info and lease rows, one batch) | insert | one creator wins, the others find the hub |
//! | dead letter and its index row (one batch) | insert | a repeat of a torn move finds the index and returns the first letter |
//! | dead letter delete | `If-Match: *` | |
//! | blobs (large properties, payloads) | none | every property blob has a fresh random name no committed row names; a blob no row names any more is deleted after the write that dropped it |
//! | queue messages | put: none; update, delete: the pop receipt | the receipt is the condition: a stale one changes nothing |

pub mod admin;
pub mod backend;
mod blobs;
mod checkpoint;
mod clear;
pub mod connection;
pub mod counters;
pub mod credential;
mod date;
mod dead_letters;
mod envelope;
pub mod error;
mod history;
mod http;
mod instances;
pub mod options;
mod partitions;
mod payloads;
mod processes;
mod queues;
mod row_etag;
mod signing;
pub mod store;
mod tables;
#[cfg(feature = "testing")]
mod testing;
mod tls;
mod token;
mod xml;

pub use admin::AccountObjects;
pub use backend::AzureBackend;
pub use connection::{AccountKey, HubName, StorageAccount, TlsOptions};
pub use counters::{OpCounts, OpKind};
pub use credential::{ClientSecretCredential, Credential, ManagedIdentityCredential, SecretText};
pub use error::AzureError;
pub use http::LEASE_REQUEST_TIMEOUT;
pub use options::{AzureConfig, AzureConfigError};
pub use processes::AZURE_LAYOUT_VERSION;
pub use store::{AzureOptions, AzureStore};
pub use taskhub_storage::backend::{BackendOptions, OptionError};
