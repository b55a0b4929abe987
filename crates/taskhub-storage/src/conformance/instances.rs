//! Cases for [`InstanceStore`](crate::InstanceStore): conditional writes, filters, paging.

use std::collections::HashSet;

use taskhub_core::OrchestrationStatus::{
    Completed, ContinuedAsNew, Failed, Pending, Running, Suspended, Terminated,
};
use taskhub_core::{FailureDetails, OrchestrationStatus, Payload, Timestamp};

use super::fixtures::{at, eid, iid, instance, json, list_all, list_page, row, without_etag};
use crate::clock::ManualClock;
use crate::error::StorageError;
use crate::history::ETag;
use crate::instances::{Expect, InstanceQuery, InstanceRow};
use crate::list_order::ListOrder;
use crate::store::TaskHubStore;

async fn put(s: &dyn TaskHubStore, row: &InstanceRow, expect: Expect) -> ETag {
    s.put_instance(row, expect).await.expect("put_instance")
}

fn is_conflict<T: std::fmt::Debug>(result: &Result<T, StorageError>) -> bool {
    matches!(result, Err(StorageError::Conflict { .. }))
}

/// Rows for the filter cases: (id, name, status, created at offset in seconds).
const DATASET: [(&str, &str, OrchestrationStatus, u64); 8] = [
    ("order-1", "Order", Running, 0),
    ("order-2", "Order", Completed, 1),
    ("order-3", "Order", Failed, 2),
    ("ship-1", "Ship", Running, 3),
    ("ship-2", "Ship", Pending, 4),
    ("orderly-9", "Other", Suspended, 5),
    ("order-4", "Order", Terminated, 6),
    ("b-order-5", "Order", ContinuedAsNew, 7),
];

async fn put_dataset(s: &dyn TaskHubStore) {
    for (id, name, status, secs) in DATASET {
        put(s, &row(id, name, status, at(secs * 1_000)), Expect::Absent).await;
    }
}

/// The IDs of `DATASET` that satisfy `keep`, in instance-ID order.
fn expected_ids(keep: impl Fn(&str, &str, OrchestrationStatus, u64) -> bool) -> Vec<String> {
    let mut ids: Vec<String> = DATASET
        .iter()
        .filter(|(id, name, status, secs)| keep(id, name, *status, *secs))
        .map(|(id, ..)| (*id).to_owned())
        .collect();
    ids.sort();
    ids
}

fn query() -> InstanceQuery {
    InstanceQuery {
        page_size: 3,
        ..InstanceQuery::default()
    }
}

/// `put_instance` with `Expect::Absent` MUST fail with `Conflict` if the row exists.
pub async fn put_instance_absent_conflicts_when_row_exists(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let original = row("dup", "First", Pending, at(0));
    let etag = put(s, &original, Expect::Absent).await;
    let second = row("dup", "Second", Running, at(1));
    let result = s.put_instance(&second, Expect::Absent).await;
    assert!(
        is_conflict(&result),
        "create over an existing row: expected Conflict, got {result:?}"
    );
    let stored = instance(s, "dup").await.expect("the row exists");
    assert_eq!(without_etag(&stored), original, "the row must be unchanged");
    assert_eq!(stored.etag, Some(etag));
}

/// `put_instance` with `Expect::ETag` MUST fail with `Conflict` unless the stored ETag
/// matches.
pub async fn put_instance_etag_conflicts_unless_etag_matches(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let v1 = row("cas", "Cas", Pending, at(0));
    let e1 = put(s, &v1, Expect::Absent).await;
    let v2 = InstanceRow {
        status: Running,
        ..v1.clone()
    };
    let e2 = put(s, &v2, Expect::ETag(e1.clone())).await;
    let v3 = InstanceRow {
        status: Completed,
        ..v1.clone()
    };
    for stale in [e1, ETag("not-an-etag-of-this-store".to_owned())] {
        let result = s.put_instance(&v3, Expect::ETag(stale.clone())).await;
        assert!(
            is_conflict(&result),
            "write with ETag {stale:?} (current {e2:?}): expected Conflict, got {result:?}"
        );
    }
    let stored = instance(s, "cas").await.expect("the row exists");
    assert_eq!(stored.status, Running, "the failed writes changed nothing");
    assert_eq!(stored.etag, Some(e2.clone()));
    put(s, &v3, Expect::ETag(e2)).await;
    assert_eq!(instance(s, "cas").await.map(|r| r.status), Some(Completed));
}

/// `put_instance` with `Expect::ETag` MUST fail with `Conflict` if the row is missing.
pub async fn put_instance_etag_conflicts_when_row_missing(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let other_etag = put(s, &row("present", "P", Running, at(0)), Expect::Absent).await;
    let missing = row("missing", "M", Running, at(0));
    let result = s.put_instance(&missing, Expect::ETag(other_etag)).await;
    assert!(
        is_conflict(&result),
        "conditional write of a missing row: expected Conflict, got {result:?}"
    );
    assert_eq!(instance(s, "missing").await, None, "nothing was created");
    // A row that was deleted is missing too, even to the writer that holds its last ETag.
    let e = put(s, &row("gone", "G", Running, at(0)), Expect::Absent).await;
    assert!(s
        .delete_instance(&iid("gone"))
        .await
        .expect("delete_instance"));
    let result = s
        .put_instance(&row("gone", "G", Completed, at(0)), Expect::ETag(e))
        .await;
    assert!(
        is_conflict(&result),
        "conditional write of a deleted row: expected Conflict, got {result:?}"
    );
    assert_eq!(instance(s, "gone").await, None);
}

/// On success `put_instance` MUST return the new ETag, which MUST differ from the previous
/// one (also when the row was deleted and created again).
pub async fn put_instance_returns_new_different_etag(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let r = row("versions", "V", Pending, at(0));
    let mut seen = Vec::new();
    seen.push(put(s, &r, Expect::Absent).await);
    for status in [Running, Suspended] {
        let previous = seen.last().cloned().expect("one ETag so far");
        let next = InstanceRow {
            status,
            ..r.clone()
        };
        seen.push(put(s, &next, Expect::ETag(previous)).await);
    }
    seen.push(put(s, &r, Expect::Any).await);
    seen.push(put(s, &r, Expect::Any).await);
    assert!(s.delete_instance(&iid("versions")).await.expect("delete"));
    seen.push(put(s, &r, Expect::Absent).await);
    let distinct: HashSet<&ETag> = seen.iter().collect();
    assert_eq!(
        distinct.len(),
        seen.len(),
        "every write must produce an ETag not seen before for this row: {seen:?}"
    );
    assert_eq!(
        instance(s, "versions").await.and_then(|r| r.etag),
        seen.last().cloned(),
        "the stored ETag is the one the last write returned"
    );
}

/// `get_instance` MUST return the row with its current ETag.
pub async fn get_instance_returns_row_with_current_etag(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let r = row("read-me", "R", Running, at(0));
    let e1 = put(s, &r, Expect::Absent).await;
    let got = instance(s, "read-me").await.expect("the row exists");
    assert_eq!(got.etag, Some(e1));
    assert_eq!(without_etag(&got), r);
    let updated = InstanceRow {
        custom_status: Some(json("\"half way\"")),
        ..r
    };
    let e2 = put(s, &updated, Expect::Any).await;
    let got = instance(s, "read-me").await.expect("the row exists");
    assert_eq!(got.etag, Some(e2));
    assert_eq!(without_etag(&got), updated);
}

/// `get_instance` MUST return `None` for a missing row.
pub async fn get_missing_instance_is_none(s: &dyn TaskHubStore, _clock: &ManualClock) {
    assert_eq!(instance(s, "absent").await, None);
    put(s, &row("absent-not", "A", Running, at(0)), Expect::Absent).await;
    assert_eq!(
        instance(s, "absent").await,
        None,
        "a prefix match is not a match"
    );
}

/// `put_instance` with `Expect::Any` writes whether or not the row exists (the `Expect` docs).
pub async fn put_instance_any_writes_unconditionally(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let r = row("free", "F", Pending, at(0));
    put(s, &r, Expect::Any).await;
    assert_eq!(instance(s, "free").await.map(|r| r.status), Some(Pending));
    let next = InstanceRow {
        status: Running,
        ..r
    };
    put(s, &next, Expect::Any).await;
    assert_eq!(instance(s, "free").await.map(|r| r.status), Some(Running));
}

/// `put_instance` with `Expect::AbsentOrPending(e)` creates a missing row and replaces a
/// Pending row of execution `e`, and conflicts on any other row (a row further along, or of
/// another execution), leaving it unchanged (the `Expect` docs: a stale writer never
/// overwrites a newer row).
pub async fn put_instance_absent_or_pending_never_replaces_a_row_further_along(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let exec = eid("exec-1");
    let running = row("aop", "A", Running, at(0));
    put(s, &running, Expect::AbsentOrPending(exec.clone())).await;
    assert_eq!(instance(s, "aop").await.map(|r| r.status), Some(Running));
    // A row further along is kept, whatever the writer brings.
    let completed = InstanceRow {
        status: Completed,
        ..running.clone()
    };
    put(s, &completed, Expect::Any).await;
    let refused = s
        .put_instance(&running, Expect::AbsentOrPending(exec.clone()))
        .await;
    assert!(
        is_conflict(&refused),
        "a Completed row was replaced: {refused:?}"
    );
    assert_eq!(instance(s, "aop").await.map(|r| r.status), Some(Completed));
    // The client's Pending row of this execution is replaced; of another execution it is not.
    let pending = InstanceRow {
        status: Pending,
        ..running.clone()
    };
    put(s, &pending, Expect::Any).await;
    let other = s
        .put_instance(&running, Expect::AbsentOrPending(eid("exec-2")))
        .await;
    assert!(
        is_conflict(&other),
        "another execution's Pending row was replaced: {other:?}"
    );
    assert_eq!(instance(s, "aop").await.map(|r| r.status), Some(Pending));
    put(s, &running, Expect::AbsentOrPending(exec)).await;
    assert_eq!(instance(s, "aop").await.map(|r| r.status), Some(Running));
}

/// Every field of an instance row is stored and read back unchanged (the `InstanceRow` docs;
/// the ETag is the store's).
pub async fn instance_row_round_trips_every_field(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let full = InstanceRow {
        instance_id: iid("full:\u{6771}\u{4eac} row"),
        name: "N\u{e4}me".to_owned(),
        version: Some("1.2.3".to_owned()),
        execution_id: eid("exec-full"),
        status: Failed,
        input: json("{\"in\":[1,\"two\",{\"three\":3}]}"),
        output: Some(json("\"out\"")),
        failure: Some(FailureDetails {
            error_type: "Boom".to_owned(),
            message: "it broke\nbadly".to_owned(),
            details: Some("trace".to_owned()),
            non_retryable: true,
        }),
        custom_status: Some(json("{\"step\":4}")),
        created_at: Timestamp::from_millis(1_700_000_000_001),
        updated_at: Timestamp::from_millis(1_700_000_000_002),
        completed_at: Some(Timestamp::from_millis(1_700_000_000_003)),
        scheduled_start: Some(Timestamp::from_millis(1_700_000_000_004)),
        partition: 13,
        tags: Default::default(),
        executions: Vec::new(),
        etag: Some(ETag("ignored on write".to_owned())),
    };
    let etag = put(s, &full, Expect::Absent).await;
    let got = instance(s, "full:\u{6771}\u{4eac} row")
        .await
        .expect("the row exists");
    assert_eq!(without_etag(&got), without_etag(&full));
    assert_eq!(
        got.etag,
        Some(etag),
        "the ETag is the store's, not the writer's"
    );
    let sparse = row("sparse", "S", Pending, Timestamp::EPOCH);
    put(s, &sparse, Expect::Absent).await;
    assert_eq!(
        instance(s, "sparse").await.map(|r| without_etag(&r)),
        Some(sparse)
    );
    // Payloads as an SDK sends them: absent, text that is not JSON, a JSON null.
    let mut opaque = row("opaque", "O", Completed, Timestamp::EPOCH);
    opaque.input = Payload::absent();
    opaque.output = Some(Payload::from_text("blob:v1:payloads:opaque/output"));
    opaque.custom_status = Some(Payload::null());
    put(s, &opaque, Expect::Absent).await;
    assert_eq!(
        instance(s, "opaque").await.map(|r| without_etag(&r)),
        Some(opaque)
    );
}

/// `list_instances` MUST apply the status filter.
pub async fn list_instances_filters_by_status(s: &dyn TaskHubStore, _clock: &ManualClock) {
    put_dataset(s).await;
    for statuses in [
        vec![Running],
        vec![Completed, Failed],
        OrchestrationStatus::ALL.to_vec(),
    ] {
        let got = list_all(
            s,
            InstanceQuery {
                statuses: statuses.clone(),
                ..query()
            },
        )
        .await;
        assert_eq!(
            got,
            expected_ids(|_, _, st, _| statuses.contains(&st)),
            "statuses {statuses:?}"
        );
    }
}

/// `list_instances` MUST apply the name filter.
pub async fn list_instances_filters_by_name(s: &dyn TaskHubStore, _clock: &ManualClock) {
    put_dataset(s).await;
    for name in ["Ship", "Order", "Ord", "Nothing"] {
        let got = list_all(
            s,
            InstanceQuery {
                name: Some(name.to_owned()),
                ..query()
            },
        )
        .await;
        assert_eq!(got, expected_ids(|_, n, _, _| n == name), "name {name:?}");
    }
}

/// `list_instances` MUST apply the creation-time filters (`created_from` inclusive,
/// `created_to` exclusive).
pub async fn list_instances_filters_by_created_range(s: &dyn TaskHubStore, _clock: &ManualClock) {
    put_dataset(s).await;
    let cases: [(Option<u64>, Option<u64>); 4] = [
        (Some(1), Some(3)),
        (Some(5), None),
        (None, Some(2)),
        (Some(4), Some(4)),
    ];
    for (from, to) in cases {
        let got = list_all(
            s,
            InstanceQuery {
                created_from: from.map(|t| at(t * 1_000)),
                created_to: to.map(|t| at(t * 1_000)),
                ..query()
            },
        )
        .await;
        let want = expected_ids(|_, _, _, secs| {
            from.is_none_or(|f| secs >= f) && to.is_none_or(|t| secs < t)
        });
        assert_eq!(got, want, "created from {from:?} s to {to:?} s");
    }
}

/// `list_instances` MUST apply the instance-ID prefix filter.
pub async fn list_instances_filters_by_instance_id_prefix(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    put_dataset(s).await;
    for prefix in ["order-", "order", "ship-2", "b-", "x"] {
        let got = list_all(
            s,
            InstanceQuery {
                instance_id_prefix: Some(prefix.to_owned()),
                ..query()
            },
        )
        .await;
        assert_eq!(
            got,
            expected_ids(|id, _, _, _| id.starts_with(prefix)),
            "prefix {prefix:?}"
        );
    }
}

/// `list_instances` MUST apply every filter at once when several are given.
pub async fn list_instances_combines_filters(s: &dyn TaskHubStore, _clock: &ManualClock) {
    put_dataset(s).await;
    let got = list_all(
        s,
        InstanceQuery {
            statuses: vec![Running, Completed, Terminated],
            name: Some("Order".to_owned()),
            created_from: Some(at(1_000)),
            created_to: Some(at(7_000)),
            instance_id_prefix: Some("order-".to_owned()),
            ..query()
        },
    )
    .await;
    assert_eq!(got, ["order-2", "order-4"]);
}

/// `list_instances` MUST order rows by instance ID.
pub async fn list_instances_orders_by_instance_id(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let ids = [
        "m",
        "B",
        "b-1",
        "b",
        "Z",
        "\u{e9}t\u{e9}",
        "10",
        "9",
        "a b",
        "a-b",
        "a_b",
        "~",
    ];
    for id in ids {
        put(s, &row(id, "Sorted", Running, at(0)), Expect::Absent).await;
    }
    let mut sorted: Vec<String> = ids.iter().map(|i| (*i).to_owned()).collect();
    sorted.sort();
    assert_listed_at_page_sizes(s, &InstanceQuery::default(), [0, 1, 5, 100], &sorted).await;
}

/// `list_instances` MUST filter by completion time (only finished instances match) and by
/// last-update time, half-open ranges like the creation-time filter.
pub async fn list_instances_filters_by_completed_and_updated_time(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    // (ID, status, updated, completed)
    let rows = [
        ("done-early", Completed, 100, Some(100)),
        ("done-late", Failed, 300, Some(300)),
        ("running", Running, 200, None),
        ("ended-mid", Terminated, 250, Some(250)),
    ];
    for (id, status, updated, completed) in rows {
        let mut r = row(id, "Timed", status, at(0));
        r.updated_at = at(updated);
        r.completed_at = completed.map(at);
        put(s, &r, Expect::Absent).await;
    }
    let ids = |q: InstanceQuery| async move {
        let mut got = list_all(s, q).await;
        got.sort();
        got
    };
    assert_eq!(
        ids(InstanceQuery {
            completed_to: Some(at(260)),
            ..InstanceQuery::default()
        })
        .await,
        ["done-early", "ended-mid"],
        "completed before 260 (a running instance never matches)"
    );
    assert_eq!(
        ids(InstanceQuery {
            completed_from: Some(at(250)),
            ..InstanceQuery::default()
        })
        .await,
        ["done-late", "ended-mid"]
    );
    assert_eq!(
        ids(InstanceQuery {
            updated_from: Some(at(200)),
            updated_to: Some(at(300)),
            ..InstanceQuery::default()
        })
        .await,
        ["ended-mid", "running"],
        "updated in [200, 300)"
    );
}

/// `list_instances` MUST order by creation time when asked (newest or oldest first, ties by
/// instance ID in the same direction), with filters, across pages.
pub async fn list_instances_orders_by_creation_time(s: &dyn TaskHubStore, _clock: &ManualClock) {
    // (ID, creation time): ties at 20 and 30, IDs in neither time nor reverse order.
    let rows = [
        ("k", 30),
        ("a", 20),
        ("z", 10),
        ("m", 20),
        ("b", 40),
        ("y", 30),
        ("c", 20),
    ];
    for (id, t) in rows {
        put(s, &row(id, "Timed", Running, at(t)), Expect::Absent).await;
    }
    put(s, &row("other", "Other", Running, at(25)), Expect::Absent).await;
    let mut oldest: Vec<(u64, &str)> = rows.iter().map(|(id, t)| (*t, *id)).collect();
    oldest.sort_unstable();
    let oldest: Vec<String> = oldest.iter().map(|(_, id)| (*id).to_owned()).collect();
    let newest: Vec<String> = oldest.iter().rev().cloned().collect();
    for (order, want) in [
        (ListOrder::OldestFirst, &oldest),
        (ListOrder::NewestFirst, &newest),
    ] {
        let query = InstanceQuery {
            name: Some("Timed".into()),
            order,
            ..InstanceQuery::default()
        };
        assert_listed_at_page_sizes(s, &query, [0, 1, 2, 3, 100], want).await;
    }
    // A token of an instance-ID listing is refused by a creation-time one.
    let first = list_page(
        s,
        &InstanceQuery {
            page_size: 1,
            ..InstanceQuery::default()
        },
    )
    .await;
    let err = s
        .list_instances(&InstanceQuery {
            order: ListOrder::NewestFirst,
            continuation: first.continuation,
            ..InstanceQuery::default()
        })
        .await
        .expect_err("a foreign token");
    assert!(matches!(err, StorageError::InvalidArgument(_)), "{err:?}");
}

/// `list_instances` MUST return at most `page_size` rows.
pub async fn list_instances_returns_at_most_page_size(s: &dyn TaskHubStore, _clock: &ManualClock) {
    for i in 0..7 {
        put(
            s,
            &row(&format!("p{i}"), "P", Running, at(0)),
            Expect::Absent,
        )
        .await;
    }
    for page_size in [1, 2, 3, 6, 7, 8] {
        let page = list_page(
            s,
            &InstanceQuery {
                page_size,
                ..InstanceQuery::default()
            },
        )
        .await;
        assert!(
            page.instances.len() <= page_size,
            "page size {page_size}: got {} rows",
            page.instances.len()
        );
        assert!(
            !page.instances.is_empty(),
            "page size {page_size}: the first page of 7 rows is empty"
        );
    }
    let zero = list_page(s, &InstanceQuery::default()).await;
    assert!(
        zero.instances.len() <= 100,
        "page size 0 means 100, got {} rows",
        zero.instances.len()
    );
}

/// Following continuation tokens MUST visit every matching row exactly once.
pub async fn list_instances_continuation_visits_every_match_once(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let mut want = Vec::new();
    for i in 0..25 {
        let id = format!("inst-{i:02}");
        let status = if i % 3 == 0 { Completed } else { Running };
        if status == Running {
            want.push(id.clone());
        }
        put(s, &row(&id, "Paged", status, at(i)), Expect::Absent).await;
    }
    let running = InstanceQuery {
        statuses: vec![Running],
        ..InstanceQuery::default()
    };
    assert_listed_at_page_sizes(s, &running, [1, 4, 16, 17, 100], &want).await;
}

/// `delete_instance` MUST remove the row and report whether it existed.
pub async fn delete_instance_removes_row_and_reports_existence(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    put(s, &row("doomed", "D", Completed, at(0)), Expect::Absent).await;
    put(s, &row("doomed-not", "D", Completed, at(0)), Expect::Absent).await;
    assert!(
        s.delete_instance(&iid("doomed")).await.expect("delete"),
        "deleting an existing row reports true"
    );
    assert_eq!(instance(s, "doomed").await, None);
    assert!(
        !s.delete_instance(&iid("doomed")).await.expect("delete"),
        "deleting a missing row reports false"
    );
    assert_eq!(
        list_all(s, InstanceQuery::default()).await,
        ["doomed-not"],
        "the deleted row is not listed; the other row stays"
    );
}

/// Lists `query` whole at each of the page sizes `sizes`: every listing MUST give `want`.
async fn assert_listed_at_page_sizes<const N: usize>(
    s: &dyn TaskHubStore,
    query: &InstanceQuery,
    sizes: [usize; N],
    want: &[String],
) {
    for page_size in sizes {
        let query = InstanceQuery {
            page_size,
            ..query.clone()
        };
        let got = list_all(s, query.clone()).await;
        assert_eq!(got, want, "listing {query:?}");
    }
}
