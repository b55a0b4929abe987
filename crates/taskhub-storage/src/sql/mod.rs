//! What the SQL backends (SQLite, PostgreSQL) both build, written once (feature `sql`):
//! the conversions between seam values and column values ([`codec`]) and the statement of one
//! page of an instance listing ([`instance_page`]: the `WHERE` clauses of an
//! [`InstanceQuery`](crate::InstanceQuery), its order, its keyset continuation and the page
//! cut from one row more). What differs between the dialects — placeholders (`?N` or `$N`),
//! a status list, a tag filter — each backend writes in its [`instance_page::Params`].

pub mod codec;
pub mod instance_page;

pub use instance_page::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
