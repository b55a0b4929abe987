//! Taskhub on Azure Storage: the storage seam ([`taskhub_storage::TaskHubStore`]) on queues,
//! tables and blobs, with the layout of the original DTFx Azure Storage provider.
//!
//! Open an existing hub with [`AzureStore::open`] (or create one with [`AzureStore::create`])
//! from a [`StorageAccount`] (parsed from a connection
//! string, `UseDevelopmentStorage=true` for Azurite, or an account name with an Entra ID
//! [`Credential`]) and a validated [`HubName`]. HTTPS uses rustls (ring provider) with the
//! Mozilla roots. See
//! `docs/ARCHITECTURE.md`, "Azure Storage backend", for the layout and what the checkpoint
//! guarantees without cross-object transactions.

pub mod admin;
mod backoff;
mod blobs;
mod checkpoint;
pub mod config;
pub mod counters;
pub mod credential;
mod date;
mod dead_letters;
mod envelope;
pub mod error;
mod history;
mod http;
mod instances;
mod partitions;
mod payloads;
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
pub use config::{AccountKey, HubName, StorageAccount, TlsOptions};
pub use counters::{OpCounts, OpKind};
pub use credential::{ClientSecretCredential, Credential, ManagedIdentityCredential, SecretText};
pub use error::AzureError;
pub use http::LEASE_REQUEST_TIMEOUT;
pub use store::{AzureOptions, AzureStore};
