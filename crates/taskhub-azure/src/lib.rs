//! Taskhub on Azure Storage: the storage seam ([`taskhub_storage::TaskHubStore`]) on queues,
//! tables and blobs, with the layout of the original DTFx Azure Storage provider.
//!
//! Open a hub with [`AzureStore::open`] from a [`StorageAccount`] (parsed from a connection
//! string, `UseDevelopmentStorage=true` for Azurite) and a validated [`HubName`]. See
//! `docs/ARCHITECTURE.md`, "Azure Storage backend", for the layout and what the checkpoint
//! guarantees without cross-object transactions.

mod admin;
mod blobs;
mod checkpoint;
pub mod config;
pub mod counters;
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
pub mod store;
mod tables;
#[cfg(feature = "testing")]
mod testing;
mod xml;

pub use config::{AccountKey, HubName, StorageAccount};
pub use counters::{OpCounts, OpKind};
pub use error::AzureError;
pub use store::{AzureOptions, AzureStore};
