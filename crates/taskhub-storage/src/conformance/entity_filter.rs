//! Cases for `InstanceQuery::include_entities`: entities (instance IDs starting with `@`) are
//! left out of a listing by the store's query unless asked for, so pages stay full.

use taskhub_core::OrchestrationStatus::Running;

use super::fixtures::{at, list_all, list_page, row};
use crate::clock::ManualClock;
use crate::instances::{Expect, InstanceQuery};
use crate::list_order::ListOrder;
use crate::store::TaskHubStore;

/// Orchestrations and entities interleaved by ID and creation time.
const ROWS: [&str; 8] = [
    "-query",
    "@Counter@a",
    "@Counter@b",
    "A-order",
    "@Timer@x",
    "ZZ",
    "a-ship",
    "@Z@@",
];

async fn put_rows(store: &dyn TaskHubStore) {
    for (i, id) in ROWS.iter().enumerate() {
        let offset = u64::try_from(i).expect("small") * 1_000;
        store
            .put_instance(&row(id, "N", Running, at(offset)), Expect::Absent)
            .await
            .expect("put_instance");
    }
}

fn orchestrations() -> Vec<String> {
    let mut ids: Vec<String> = ROWS
        .iter()
        .filter(|id| !id.starts_with('@'))
        .map(|id| (*id).to_owned())
        .collect();
    ids.sort();
    ids
}

/// `list_instances` MUST leave out rows whose ID starts with `@` unless `include_entities`
/// is set, and MUST do it in its query: every page but the last is full, in each order.
pub async fn list_instances_leaves_entities_out_unless_asked(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    put_rows(s).await;
    let mut all: Vec<String> = ROWS.iter().map(|id| (*id).to_owned()).collect();
    all.sort();
    for order in [
        ListOrder::InstanceId,
        ListOrder::NewestFirst,
        ListOrder::OldestFirst,
    ] {
        let sorted = |mut ids: Vec<String>| {
            if order != ListOrder::InstanceId {
                let pos = |id: &String| ROWS.iter().position(|r| r == id).expect("known");
                ids.sort_by_key(pos);
                if order == ListOrder::NewestFirst {
                    ids.reverse();
                }
            }
            ids
        };
        let query = InstanceQuery {
            order,
            page_size: 2,
            ..InstanceQuery::default()
        };
        assert_eq!(
            list_all(s, query.clone()).await,
            sorted(orchestrations()),
            "{order:?}: orchestrations only by default"
        );
        let with = InstanceQuery {
            include_entities: true,
            ..query.clone()
        };
        assert_eq!(
            list_all(s, with).await,
            sorted(all.clone()),
            "{order:?}: every row with include_entities"
        );
        // Pages are full: four orchestrations come in two pages of two.
        let first = list_page(s, &query).await;
        assert_eq!(
            first.instances.len(),
            2,
            "{order:?}: the first page is full"
        );
        let token = first.continuation.expect("a second page");
        let second = list_page(
            s,
            &InstanceQuery {
                continuation: Some(token),
                ..query.clone()
            },
        )
        .await;
        assert_eq!(
            second.instances.len(),
            2,
            "{order:?}: the second page is full"
        );
    }
    // With a prefix that names entities, only the flag lets them through.
    let prefixed = InstanceQuery {
        instance_id_prefix: Some("@Counter@".to_owned()),
        ..InstanceQuery::default()
    };
    assert!(list_all(s, prefixed.clone()).await.is_empty());
    assert_eq!(
        list_all(
            s,
            InstanceQuery {
                include_entities: true,
                ..prefixed
            }
        )
        .await,
        ["@Counter@a", "@Counter@b"]
    );
}
