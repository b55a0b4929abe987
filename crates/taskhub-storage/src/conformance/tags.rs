//! Cases for the instance row's tags and execution records (`InstanceRow::tags`,
//! `InstanceRow::executions`) and the tag filter of `InstanceQuery::tags`.

use taskhub_core::OrchestrationStatus::{Completed, ContinuedAsNew, Running};
use taskhub_core::Timestamp;

use super::fixtures::{at, eid, instance, json, list_all, row, without_etag};
use crate::clock::ManualClock;
use crate::instances::{ExecutionRecord, Expect, InstanceQuery, Tags};
use crate::list_order::ListOrder;
use crate::store::TaskHubStore;

fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A row's tags and execution records are stored and read back exactly, also after a
/// conditional rewrite.
pub async fn instance_row_round_trips_tags_and_execution_records(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let mut tagged = row("tagged", "T", Running, at(0));
    tagged.tags = tags(&[
        ("team", "pay'ments"),
        ("region:eu/west-1.a_b", "\u{6771}\u{4eac} = \"x\""),
        ("empty", ""),
    ]);
    tagged.executions = vec![ExecutionRecord {
        execution_id: eid("exec-0"),
        status: ContinuedAsNew,
        input: json("{\"n\":0}"),
        output: Some(json("{\"n\":1}")),
        failure: None,
        custom_status: Some(json("\"step 0\"")),
        started_at: Timestamp::from_millis(1_700_000_000_001),
        completed_at: Timestamp::from_millis(1_700_000_000_002),
    }];
    let etag = s
        .put_instance(&tagged, Expect::Absent)
        .await
        .expect("put_instance");
    let got = instance(s, "tagged").await.expect("the row exists");
    assert_eq!(without_etag(&got), without_etag(&tagged));

    let mut next = got.clone();
    next.executions.push(ExecutionRecord {
        execution_id: eid("exec-1"),
        status: ContinuedAsNew,
        input: json("{\"n\":1}"),
        output: None,
        failure: None,
        custom_status: None,
        started_at: Timestamp::from_millis(1_700_000_000_002),
        completed_at: Timestamp::from_millis(1_700_000_000_003),
    });
    s.put_instance(&next, Expect::ETag(etag))
        .await
        .expect("put_instance");
    let got = instance(s, "tagged").await.expect("the row exists");
    assert_eq!(without_etag(&got), without_etag(&next));
    let untagged = instance(s, "tagged").await.map(|r| r.tags.len());
    assert_eq!(untagged, Some(3));
}

/// `list_instances` with tags returns only rows that carry every given tag with its value, in
/// either order, across pages, combined with the other filters.
pub async fn list_instances_filters_by_tags(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let rows = [
        ("a", Running, &[("team", "pay"), ("env", "prod")][..]),
        ("b", Completed, &[("team", "pay"), ("env", "dev")][..]),
        ("c", Running, &[("team", "pay'ments"), ("env", "prod")][..]),
        ("d", Running, &[("env", "prod")][..]),
        ("e", Completed, &[][..]),
        (
            "f",
            Running,
            &[("team", "pay"), ("env", "prod"), ("x", "")][..],
        ),
    ];
    for (i, (id, status, t)) in rows.iter().enumerate() {
        let mut r = row(id, "Tagged", *status, at(i as u64 * 1_000));
        r.tags = tags(t);
        s.put_instance(&r, Expect::Absent)
            .await
            .expect("put_instance");
    }
    let by = |pairs: &[(&str, &str)], order: ListOrder| InstanceQuery {
        tags: tags(pairs),
        order,
        page_size: 1,
        ..InstanceQuery::default()
    };
    for order in [ListOrder::InstanceId, ListOrder::OldestFirst] {
        assert_eq!(
            list_all(s, by(&[("team", "pay")], order)).await,
            ["a", "b", "f"],
            "{order:?}"
        );
        assert_eq!(
            list_all(s, by(&[("team", "pay"), ("env", "prod")], order)).await,
            ["a", "f"],
            "{order:?}"
        );
        assert_eq!(
            list_all(s, by(&[("team", "pay'ments")], order)).await,
            ["c"]
        );
        assert_eq!(list_all(s, by(&[("x", "")], order)).await, ["f"]);
        assert!(list_all(s, by(&[("team", "nobody")], order))
            .await
            .is_empty());
    }
    let completed_pay = InstanceQuery {
        statuses: vec![Completed],
        ..by(&[("team", "pay")], ListOrder::InstanceId)
    };
    assert_eq!(list_all(s, completed_pay).await, ["b"]);
    assert_eq!(
        list_all(s, InstanceQuery::default()).await.len(),
        6,
        "no tag filter: every row"
    );
}
