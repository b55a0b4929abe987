//! The order of an instance listing, and the cursor of the orders by creation time.
//!
//! Listings are ordered by instance ID unless a query asks for creation time (newest or oldest
//! first). Ties in creation time are broken by instance ID, so the order is total and a
//! continuation token — the (creation time, instance ID) of a page's last row — resumes exactly
//! after it. Backends with an index on creation time page by that key; the others sort the
//! matching rows with [`page_sorted`].

use std::cmp::Ordering;

use taskhub_core::Timestamp;

use crate::error::{StorageError, StorageResult};
use crate::instances::{InstancePage, InstanceRow};

/// The order of [`InstanceStore::list_instances`](crate::InstanceStore::list_instances).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListOrder {
    /// By instance ID, ascending (the default, and the Durable Functions API's order).
    #[default]
    InstanceId,
    /// By creation time, newest first (ties: instance ID, descending).
    NewestFirst,
    /// By creation time, oldest first (ties: instance ID, ascending).
    OldestFirst,
}

impl ListOrder {
    /// The order's name in URLs and on the command line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InstanceId => "id",
            Self::NewestFirst => "newest",
            Self::OldestFirst => "oldest",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s names.
    ///
    /// # Errors
    /// `InvalidArgument` naming the accepted values.
    pub fn parse(text: &str) -> StorageResult<Self> {
        match text {
            "id" => Ok(Self::InstanceId),
            "newest" => Ok(Self::NewestFirst),
            "oldest" => Ok(Self::OldestFirst),
            other => Err(StorageError::InvalidArgument(format!(
                "order {other:?}: use id, newest or oldest"
            ))),
        }
    }

    /// How `a` and `b` compare in a creation-time order (`Equal` in the instance-ID order is
    /// never needed: IDs are unique).
    fn compare(self, a: (Timestamp, &str), b: (Timestamp, &str)) -> Ordering {
        match self {
            Self::NewestFirst => b.cmp(&a),
            Self::OldestFirst | Self::InstanceId => a.cmp(&b),
        }
    }
}

/// Where a creation-time listing resumes: the last row of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedCursor {
    /// Its creation time.
    pub created_at: Timestamp,
    /// Its instance ID.
    pub instance_id: String,
}

/// Continuation tokens of creation-time listings start with this.
const PREFIX: &str = "created:";

impl CreatedCursor {
    /// The cursor just past `row`.
    #[must_use]
    pub fn of(row: &InstanceRow) -> Self {
        Self {
            created_at: row.created_at,
            instance_id: row.instance_id.as_str().to_owned(),
        }
    }

    /// The continuation token.
    #[must_use]
    pub fn token(&self) -> String {
        format!(
            "{PREFIX}{}:{}",
            self.created_at.as_millis(),
            self.instance_id
        )
    }

    /// Parses [`token`](Self::token).
    ///
    /// # Errors
    /// `InvalidArgument` if `token` is not one (e.g. a token of an instance-ID listing).
    pub fn parse(token: &str) -> StorageResult<Self> {
        token
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .and_then(|(ms, id)| {
                Some(Self {
                    created_at: Timestamp::from_millis(ms.parse().ok()?),
                    instance_id: id.to_owned(),
                })
            })
            .ok_or_else(|| {
                StorageError::InvalidArgument(format!(
                    "continuation token {token:?} does not belong to a listing by creation time"
                ))
            })
    }
}

/// One page of `items` (everything matching a query, in any order), each keyed by its
/// row's creation time and instance ID, in a creation-time `order`, resuming after
/// `continuation`. Returns the page and whether more items follow it. For backends without an
/// index on creation time (they may key rows they have not fully read yet).
///
/// # Errors
/// `InvalidArgument` for a token that is not a creation-time cursor.
pub fn page_by_created<T>(
    mut items: Vec<(CreatedCursor, T)>,
    order: ListOrder,
    continuation: Option<&str>,
    page_size: usize,
) -> StorageResult<(Vec<T>, bool)> {
    let key = |c: &CreatedCursor| (c.created_at, c.instance_id.clone());
    items.sort_by(|a, b| {
        let (a, b) = (key(&a.0), key(&b.0));
        order.compare((a.0, &a.1), (b.0, &b.1))
    });
    let start = match continuation {
        None => 0,
        Some(token) => {
            let c = CreatedCursor::parse(token)?;
            items.partition_point(|(k, _)| {
                order.compare(
                    (k.created_at, k.instance_id.as_str()),
                    (c.created_at, &c.instance_id),
                ) != Ordering::Greater
            })
        }
    };
    let mut page: Vec<T> = items
        .into_iter()
        .skip(start)
        .take(page_size + 1)
        .map(|(_, item)| item)
        .collect();
    let more = page.len() > page_size;
    page.truncate(page_size);
    Ok((page, more))
}

/// One page of `rows` (every row matching a query, in any order) in a creation-time `order`,
/// resuming after `continuation`: [`page_by_created`] over whole rows.
///
/// # Errors
/// `InvalidArgument` for a token that is not a creation-time cursor.
pub fn page_sorted(
    rows: Vec<InstanceRow>,
    order: ListOrder,
    continuation: Option<&str>,
    page_size: usize,
) -> StorageResult<InstancePage> {
    let keyed = rows
        .into_iter()
        .map(|r| (CreatedCursor::of(&r), r))
        .collect();
    let (instances, more) = page_by_created(keyed, order, continuation, page_size)?;
    let continuation = more
        .then(|| instances.last().map(|r| CreatedCursor::of(r).token()))
        .flatten();
    Ok(InstancePage {
        instances,
        continuation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_foreign_ones_are_refused() {
        let c = CreatedCursor {
            created_at: Timestamp::from_millis(1_700_000_000_123),
            instance_id: "a:b:c".to_owned(),
        };
        assert_eq!(CreatedCursor::parse(&c.token()).unwrap(), c);
        assert!(CreatedCursor::parse("i:abc").is_err());
        assert!(CreatedCursor::parse("created:x:abc").is_err());
        assert_eq!(ListOrder::parse("newest").unwrap(), ListOrder::NewestFirst);
        assert!(ListOrder::parse("name").is_err());
    }
}
