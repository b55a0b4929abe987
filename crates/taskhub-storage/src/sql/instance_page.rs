//! One page of an instance listing as a SQL statement, for any dialect: the `WHERE` clauses
//! of an [`InstanceQuery`] (statuses, name, time ranges, an ID prefix as a key range, entities
//! left out unless asked, tags), its order (by instance ID, or by creation time with the ID
//! as tie-break), the keyset condition that resumes after a continuation token, and a `LIMIT`
//! of one row more than the page, which tells whether another page exists
//! ([`finish_page`]). A backend supplies the parameters ([`Params`]).

use crate::{
    CreatedCursor, InstancePage, InstanceQuery, InstanceRow, ListOrder, StorageError,
    StorageResult, Tags,
};

/// The page size when a query gives 0.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The largest page size a query may ask for.
pub const MAX_PAGE_SIZE: usize = 1000;

/// A dialect's parameters: each method binds its values and returns the SQL that names them.
pub trait Params {
    /// Binds a text value; returns its placeholder (`?3`, `$3`).
    fn text(&mut self, value: String) -> String;

    /// Binds an integer; returns its placeholder.
    fn integer(&mut self, value: i64) -> String;

    /// The condition that the row's `status` is one of `statuses` (never empty).
    fn status_in(&mut self, statuses: Vec<String>) -> String;

    /// The condition that the row's `tags` hold every key with its value (never empty).
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] if the filter cannot be bound.
    fn tags_hold(&mut self, tags: &Tags) -> StorageResult<String>;
}

/// The `N`th placeholder (from 1) in SQLite's style, `?N`.
#[must_use]
pub fn question_mark(n: usize) -> String {
    format!("?{n}")
}

/// The `N`th placeholder (from 1) in PostgreSQL's style, `$N`.
#[must_use]
pub fn dollar(n: usize) -> String {
    format!("${n}")
}

/// The query's page size: 0 means [`DEFAULT_PAGE_SIZE`].
///
/// # Errors
/// [`StorageError::InvalidArgument`] over [`MAX_PAGE_SIZE`].
pub fn page_size(query: &InstanceQuery) -> StorageResult<usize> {
    match query.page_size {
        0 => Ok(DEFAULT_PAGE_SIZE),
        n if n > MAX_PAGE_SIZE => Err(StorageError::InvalidArgument(format!(
            "page size {n}: it must be 1 to {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})"
        ))),
        n => Ok(n),
    }
}

/// The statement reading `columns` of the `instances` rows of one page of `query`, at most
/// `limit` of them; its values are bound into `params`.
///
/// # Errors
/// [`StorageError::InvalidArgument`] for a malformed continuation token or tag filter.
pub fn select_page(
    query: &InstanceQuery,
    columns: &str,
    limit: usize,
    params: &mut impl Params,
) -> StorageResult<String> {
    let mut clauses = filters(query, params)?;
    // The order's key and, after a page, the keyset condition that resumes past its last row
    // (rows in creation-time order walk the (created_at, instance_id) index).
    let (order_by, after) = match query.order {
        ListOrder::NewestFirst => ("created_at DESC, instance_id DESC", "<"),
        ListOrder::OldestFirst => ("created_at ASC, instance_id ASC", ">"),
        _ => ("instance_id", ">"),
    };
    if let Some(token) = &query.continuation {
        if query.order == ListOrder::InstanceId {
            let m = params.text(token.clone());
            clauses.push(format!("instance_id > {m}"));
        } else {
            let c = CreatedCursor::parse(token)?;
            let t = params.integer(super::codec::ts_to_sql(c.created_at));
            let id = params.text(c.instance_id);
            clauses.push(format!("(created_at, instance_id) {after} ({t}, {id})"));
        }
    }
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let m = params.integer(i64::try_from(limit).unwrap_or(i64::MAX));
    Ok(format!(
        "SELECT {columns} FROM instances {filter} ORDER BY {order_by} LIMIT {m}"
    ))
}

/// The conditions of the query's filters.
fn filters(query: &InstanceQuery, params: &mut impl Params) -> StorageResult<Vec<String>> {
    let mut clauses: Vec<String> = Vec::new();
    if !query.statuses.is_empty() {
        let list = query.statuses.iter().map(|s| s.as_str().to_owned());
        clauses.push(params.status_in(list.collect()));
    }
    if let Some(name) = &query.name {
        let m = params.text(name.clone());
        clauses.push(format!("name = {m}"));
    }
    // Time ranges (creation time has an index; completion and last change are filters of an
    // operator's listing or clean-up, combined with the indexed ones where given).
    for (bound, column, op) in [
        (query.created_from, "created_at", ">="),
        (query.created_to, "created_at", "<"),
        (query.completed_from, "completed_at", ">="),
        (query.completed_to, "completed_at", "<"),
        (query.updated_from, "updated_at", ">="),
        (query.updated_to, "updated_at", "<"),
    ] {
        if let Some(t) = bound {
            let m = params.integer(super::codec::ts_to_sql(t));
            clauses.push(format!("{column} {op} {m}"));
        }
    }
    let prefix = query.instance_id_prefix.as_deref();
    if let Some(prefix) = prefix.filter(|p| !p.is_empty()) {
        let m = params.text(prefix.to_owned());
        clauses.push(format!("instance_id >= {m}"));
        if let Some(upper) = prefix_upper_bound(prefix) {
            let m = params.text(upper);
            clauses.push(format!("instance_id < {m}"));
        }
    }
    // Entities (IDs starting with '@') are left out unless asked for: the two ranges around
    // the '@' prefix, a condition on the primary key.
    if !query.include_entities {
        clauses.push("(instance_id < '@' OR instance_id >= 'A')".to_owned());
    }
    if !query.tags.is_empty() {
        clauses.push(params.tags_hold(&query.tags)?);
    }
    Ok(clauses)
}

/// The page from the rows a [`select_page`] of `page_size + 1` returned, decoded by `decode`:
/// the first `page_size`, and a continuation token if there was one more.
///
/// # Errors
/// The first error of `decode`.
pub fn finish_page<R>(
    query: &InstanceQuery,
    rows: impl IntoIterator<Item = R>,
    page_size: usize,
    decode: impl FnMut(R) -> StorageResult<InstanceRow>,
) -> StorageResult<InstancePage> {
    let mut rows = rows.into_iter();
    let instances = rows
        .by_ref()
        .take(page_size)
        .map(decode)
        .collect::<StorageResult<Vec<_>>>()?;
    let more = rows.next().is_some();
    let continuation = if more {
        instances.last().map(|r| match query.order {
            ListOrder::InstanceId => r.instance_id.as_str().to_owned(),
            _ => CreatedCursor::of(r).token(),
        })
    } else {
        None
    };
    Ok(InstancePage {
        instances,
        continuation,
    })
}

/// The smallest string greater than every string that starts with `prefix` (by code point:
/// SQLite's BINARY collation, PostgreSQL's `"C"`), or `None` if there is none.
#[must_use]
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = u32::from(last) + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests;
