//! Storage operations counted by kind at the HTTP layer: one count per request sent to the
//! service (every attempt, retries included — each is a billed transaction). Relaxed atomic
//! increments, so counting costs next to nothing; read a [`OpCounts`] snapshot with
//! [`AzureStore::op_counts`](crate::AzureStore::op_counts) and subtract two with
//! [`OpCounts::since`].

use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::{Req, Service};

/// What kind of storage operation a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// Put Message.
    QueuePut,
    /// Get Messages (a dequeue, whether it returns messages or not).
    QueueGet,
    /// Delete Message.
    QueueDelete,
    /// Update Message (abandon with a delay, extend the visibility timeout).
    QueueUpdate,
    /// Anything else on queues: create, delete, metadata, peek.
    QueueOther,
    /// Query Entities for one entity by its keys.
    TableRead,
    /// Insert, replace, merge or delete one entity.
    TableWrite,
    /// An entity-group transaction (`$batch`).
    TableBatch,
    /// Query Entities with a filter (one page).
    TableQuery,
    /// Anything else on tables: create, delete.
    TableOther,
    /// Get Blob.
    BlobRead,
    /// Put Blob.
    BlobWrite,
    /// Delete Blob.
    BlobDelete,
    /// Anything else on blobs: containers, listings.
    BlobOther,
}

impl OpKind {
    /// Every kind, in report order.
    pub const ALL: [Self; 14] = [
        Self::QueuePut,
        Self::QueueGet,
        Self::QueueDelete,
        Self::QueueUpdate,
        Self::QueueOther,
        Self::TableRead,
        Self::TableWrite,
        Self::TableBatch,
        Self::TableQuery,
        Self::TableOther,
        Self::BlobRead,
        Self::BlobWrite,
        Self::BlobDelete,
        Self::BlobOther,
    ];

    /// A short `snake_case` name (`queue_put`, `table_batch`...).
    pub fn name(self) -> &'static str {
        match self {
            Self::QueuePut => "queue_put",
            Self::QueueGet => "queue_get",
            Self::QueueDelete => "queue_delete",
            Self::QueueUpdate => "queue_update",
            Self::QueueOther => "queue_other",
            Self::TableRead => "table_read",
            Self::TableWrite => "table_write",
            Self::TableBatch => "table_batch",
            Self::TableQuery => "table_query",
            Self::TableOther => "table_other",
            Self::BlobRead => "blob_read",
            Self::BlobWrite => "blob_write",
            Self::BlobDelete => "blob_delete",
            Self::BlobOther => "blob_other",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }

    /// The kind of a request, from its service, method, path and query.
    pub(crate) fn of(req: &Req) -> Self {
        let has_query = |name: &str| req.query.iter().any(|(k, _)| *k == name);
        match req.service {
            Service::Queue => {
                let on_message = req.path.contains("/messages/");
                let on_messages = req.path.ends_with("/messages");
                match req.method {
                    "POST" if on_messages => Self::QueuePut,
                    "GET" if on_messages && !has_query("peekonly") => Self::QueueGet,
                    "DELETE" if on_message => Self::QueueDelete,
                    "PUT" if on_message => Self::QueueUpdate,
                    _ => Self::QueueOther,
                }
            }
            Service::Table => {
                let tables = req.path.starts_with("/Tables");
                match req.method {
                    _ if tables => Self::TableOther,
                    "POST" if req.path == "/$batch" => Self::TableBatch,
                    "GET" if has_query("$filter") || req.path.ends_with("()") => Self::TableQuery,
                    "GET" => Self::TableRead,
                    _ => Self::TableWrite,
                }
            }
            Service::Blob => {
                if has_query("restype") || has_query("comp") {
                    return Self::BlobOther;
                }
                match req.method {
                    "GET" | "HEAD" => Self::BlobRead,
                    "PUT" => Self::BlobWrite,
                    "DELETE" => Self::BlobDelete,
                    _ => Self::BlobOther,
                }
            }
        }
    }
}

/// The live counters of one store (shared by its HTTP client's clones).
#[derive(Debug, Default)]
pub(crate) struct OpCounters {
    counts: [AtomicU64; OpKind::ALL.len()],
}

impl OpCounters {
    /// Counts one request of `kind`.
    #[expect(
        clippy::indexing_slicing,
        reason = "OpKind::index is the position in OpKind::ALL, whose length sizes the array"
    )]
    pub(crate) fn add(&self, kind: OpKind) {
        self.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn snapshot(&self) -> OpCounts {
        OpCounts {
            counts: self.counts.each_ref().map(|c| c.load(Ordering::Relaxed)),
        }
    }
}

/// Storage operations by kind, as counted at one moment (or the difference of two moments).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts {
    counts: [u64; OpKind::ALL.len()],
}

impl OpCounts {
    /// Operations of `kind`.
    #[expect(
        clippy::indexing_slicing,
        reason = "OpKind::index is the position in OpKind::ALL, whose length sizes the array"
    )]
    pub fn get(&self, kind: OpKind) -> u64 {
        self.counts[kind.index()]
    }

    /// All operations.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The operations since `earlier` (a snapshot of the same store taken before).
    pub fn since(&self, earlier: &Self) -> Self {
        let mut counts = self.counts;
        for (now, before) in counts.iter_mut().zip(earlier.counts) {
            *now = now.saturating_sub(before);
        }
        Self { counts }
    }

    /// The kinds with a non-zero count, in report order.
    pub fn nonzero(&self) -> impl Iterator<Item = (OpKind, u64)> + '_ {
        OpKind::ALL
            .into_iter()
            .map(|k| (k, self.get(k)))
            .filter(|(_, n)| *n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(service: Service, method: &'static str, path: &str, query: &[&'static str]) -> OpKind {
        let mut req = Req::new(service, method, path.to_owned());
        for q in query {
            req = req.query(q, "x");
        }
        OpKind::of(&req)
    }

    #[test]
    fn requests_are_classified_by_kind() {
        use OpKind::{
            BlobDelete, BlobOther, BlobRead, BlobWrite, QueueDelete, QueueGet, QueueOther,
            QueuePut, QueueUpdate, TableBatch, TableOther, TableQuery, TableRead, TableWrite,
        };
        use Service::{Blob, Queue, Table};
        let messages = "/h-workitems/messages";
        let message = "/h-control-00/messages/id";
        let row = "/HHistory(PartitionKey='a',RowKey='b')";
        let cases: [(Service, &'static str, &str, &[&'static str], OpKind); 20] = [
            (Queue, "POST", messages, &[], QueuePut),
            (Queue, "GET", messages, &[], QueueGet),
            (Queue, "GET", messages, &["peekonly"], QueueOther),
            (Queue, "DELETE", message, &[], QueueDelete),
            (Queue, "PUT", message, &[], QueueUpdate),
            (Queue, "PUT", "/h-control-00", &[], QueueOther),
            (Queue, "GET", "/h-control-00", &["comp"], QueueOther),
            (Table, "GET", row, &[], TableRead),
            (Table, "GET", "/HHistory()", &["$filter"], TableQuery),
            (Table, "POST", "/HHistory", &[], TableWrite),
            (Table, "PUT", row, &[], TableWrite),
            (Table, "DELETE", row, &[], TableWrite),
            (Table, "POST", "/$batch", &[], TableBatch),
            (Table, "POST", "/Tables", &[], TableOther),
            (Table, "DELETE", "/Tables('HHistory')", &[], TableOther),
            (Blob, "GET", "/c/b", &[], BlobRead),
            (Blob, "PUT", "/c/b", &[], BlobWrite),
            (Blob, "DELETE", "/c/b", &[], BlobDelete),
            (Blob, "PUT", "/c", &["restype"], BlobOther),
            (Blob, "GET", "/c", &["restype", "comp"], BlobOther),
        ];
        for (service, method, path, query, expected) in cases {
            assert_eq!(
                kind(service, method, path, query),
                expected,
                "{method} {path} {query:?}"
            );
        }
    }

    #[test]
    fn counts_subtract_by_kind() {
        let c = OpCounters::default();
        c.add(OpKind::QueuePut);
        let before = c.snapshot();
        c.add(OpKind::QueuePut);
        c.add(OpKind::TableBatch);
        let d = c.snapshot().since(&before);
        assert_eq!(d.get(OpKind::QueuePut), 1);
        assert_eq!(d.get(OpKind::TableBatch), 1);
        assert_eq!(d.total(), 2);
        assert_eq!(
            d.nonzero().map(|(k, _)| k.name()).collect::<Vec<_>>(),
            ["queue_put", "table_batch"]
        );
    }
}
