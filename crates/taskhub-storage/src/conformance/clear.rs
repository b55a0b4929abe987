//! Cases for `ClearStore::clear_hub`: the hub is emptied in place, its partitions kept.

use std::time::Duration;

use taskhub_core::OrchestrationStatus::{Pending, Running};

use super::fixtures::{
    advance, at, delayed, dequeue, enqueue, history_request, iid, instance, json, load, outbound,
    partition_row, queue_length, row, start_history, take_lease, DELAY, PAST_VISIBILITY, START,
};
use crate::checkpoint::{CheckpointRequest, LeaseFence};
use crate::clear::Cleared;
use crate::clock::ManualClock;
use crate::dead_letters::DeadLetter;
use crate::instances::{Expect, InstanceQuery};
use crate::queue::{QueueName, MAX_PARTITIONS};
use crate::store::TaskHubStore;

/// Rounds of writes after the clear, each checking that the stale ETags and receipt still fail.
const ROUNDS: u64 = 12;

/// `clear_hub` MUST remove every instance row, history, queue message (visible, held and
/// delayed), payload and dead letter; MUST keep the hub info and partition rows as they were;
/// MUST make a checkpoint or row write conditional on an ETag read before it fail with
/// `Conflict`, and a receipt from before it delete nothing; and the store MUST work afterwards
/// (a fenced checkpoint under the lease held before commits).
pub async fn clear_hub_empties_the_hub_and_keeps_its_partitions(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    s.create_hub(2, START).await.expect("create_hub");
    let epoch = take_lease(s, 0, "w1").await;
    let hub_before = s.hub_info().await.expect("hub_info");
    let partitions_before = s.list_partitions().await.expect("list_partitions");

    // One of every kind of object.
    let history = start_history(s, "orch-a", "exec-1", Vec::new()).await;
    let orch_etag = s
        .put_instance(
            &row("orch-a", "Conformance", Running, at(0)),
            Expect::Absent,
        )
        .await
        .expect("put_instance");
    s.put_instance(
        &row("@counter@x", "counter", Running, at(1)),
        Expect::Absent,
    )
    .await
    .expect("put_instance (entity)");
    enqueue(s, QueueName::Control(0), &["c0"]).await;
    enqueue(s, QueueName::Control(1), &["c1"]).await;
    enqueue(s, QueueName::WorkItems, &["w1", "w2"]).await;
    s.enqueue(QueueName::Control(0), vec![delayed("timer", DELAY)])
        .await
        .expect("enqueue delayed");
    let held = dequeue(s, QueueName::WorkItems, 1).await;
    assert_eq!(held.len(), 1, "one work item held");
    s.put_payload(&iid("orch-a"), "input", b"large".to_vec())
        .await
        .expect("put_payload");
    s.add_dead_letter(DeadLetter {
        id: String::new(),
        queue: QueueName::Control(1),
        body: "poison".to_owned(),
        reason: "failed 5 times".to_owned(),
        dequeue_count: 5,
        dead_lettered_at: at(2),
    })
    .await
    .expect("add_dead_letter");

    let cleared = s.clear_hub().await.expect("clear_hub");
    assert_eq!(
        cleared,
        Cleared {
            instances: 2,
            histories: 1,
            messages: 5,
            payloads: 1,
            dead_letters: 1,
        }
    );

    // Every object is gone.
    for id in ["orch-a", "@counter@x"] {
        assert_eq!(instance(s, id).await, None);
    }
    assert_eq!(s.load_history(&iid("orch-a")).await.expect("load"), None);
    let all = InstanceQuery {
        include_entities: true,
        ..InstanceQuery::default()
    };
    let page = s.list_instances(&all).await.expect("list_instances");
    assert!(page.instances.is_empty(), "no rows listed: {page:?}");
    assert_eq!(
        s.get_payload(&iid("orch-a"), "input").await.expect("get"),
        None
    );
    assert!(s
        .list_dead_letters(None, 10)
        .await
        .expect("list_dead_letters")
        .is_empty());
    for p in 0..MAX_PARTITIONS {
        assert_eq!(
            queue_length(s, QueueName::Control(p)).await,
            0,
            "control {p}"
        );
    }
    assert_eq!(queue_length(s, QueueName::WorkItems).await, 0);
    // Neither the delayed message nor the held one comes back.
    advance(s, clock, PAST_VISIBILITY).await;
    assert!(dequeue(s, QueueName::Control(0), 32).await.is_empty());
    assert!(dequeue(s, QueueName::WorkItems, 32).await.is_empty());

    // The hub and its partitions are as they were.
    assert_eq!(s.hub_info().await.expect("hub_info"), hub_before);
    assert_eq!(
        s.list_partitions().await.expect("list_partitions"),
        partitions_before
    );
    assert_eq!(partition_row(s, 0).await.epoch, epoch);

    // What was read before the clear is stale, even against the same object made again and
    // written over and over: no ETag or receipt is handed out twice. Each kind is written
    // right after a clear of its own, so a backend that restarted its counters at the clear
    // would hand the old value to that very object within these rounds.
    let mut current = start_history(s, "orch-a", "exec-1", Vec::new()).await;
    for round in 0..ROUNDS {
        let stale = s
            .checkpoint(history_request(
                "orch-a",
                "exec-1",
                Some(&history),
                false,
                vec![super::fixtures::raised(5, "late")],
            ))
            .await
            .expect_err("a checkpoint on history read before the clear");
        assert!(
            stale.is_conflict(),
            "round {round}: Conflict, got {stale:?}"
        );
        assert_eq!(
            load(s, "orch-a").await.events,
            current.events,
            "round {round}: the history made after the clear is untouched"
        );
        s.checkpoint(history_request(
            "orch-a",
            "exec-1",
            Some(&current),
            false,
            vec![super::fixtures::raised(10 + round, "again")],
        ))
        .await
        .expect("a checkpoint on the new history");
        current = load(s, "orch-a").await;
    }

    s.clear_hub().await.expect("clear_hub, again");
    let mut row_etag = s
        .put_instance(
            &row("orch-a", "Conformance", Running, at(3)),
            Expect::Absent,
        )
        .await
        .expect("put_instance after the clear");
    for round in 0..ROUNDS {
        let stale_row = s
            .put_instance(
                &row("orch-a", "Conformance", Pending, at(0)),
                Expect::ETag(orch_etag.clone()),
            )
            .await
            .expect_err("a row write at an ETag read before the clear");
        assert!(
            stale_row.is_conflict(),
            "round {round}: Conflict, got {stale_row:?}"
        );
        let kept = instance(s, "orch-a")
            .await
            .expect("the row made after the clear");
        assert_eq!(
            kept.status, Running,
            "round {round}: the row made after the clear is untouched"
        );
        row_etag = s
            .put_instance(
                &row("orch-a", "Conformance", Running, at(3 + round)),
                Expect::ETag(row_etag),
            )
            .await
            .expect("a row write at the new row's ETag");
    }

    s.clear_hub().await.expect("clear_hub, a third time");
    enqueue(s, QueueName::WorkItems, &["after"]).await;
    let old_receipt = held.first().map(|d| d.receipt.clone()).expect("held");
    for round in 0..ROUNDS {
        let after = dequeue(s, QueueName::WorkItems, 1).await;
        let after_receipt = match after.as_slice() {
            [d] if d.body == "after" => d.receipt.clone(),
            other => panic!("round {round}: the new work item: {other:?}"),
        };
        assert!(
            s.delete(QueueName::WorkItems, &old_receipt).await.is_err(),
            "round {round}: a receipt from before the clear deletes nothing"
        );
        s.release(QueueName::WorkItems, &after_receipt, Duration::ZERO)
            .await
            .expect("the new message was still there for its own receipt");
    }

    // The store works: a checkpoint fenced by the lease held before the clear commits.
    let outcome = s
        .checkpoint(CheckpointRequest {
            instance_id: iid("orch-b"),
            fence: Some(LeaseFence {
                partition: 0,
                epoch,
            }),
            instance: Some((
                crate::instances::InstanceRow {
                    input: json("{\"n\":2}"),
                    ..row("orch-b", "Conformance", Pending, at(10))
                },
                Expect::Absent,
            )),
            outbound: vec![outbound(QueueName::Control(1), "next")],
            ..history_request(
                "orch-b",
                "exec-2",
                None,
                true,
                vec![super::fixtures::started("exec-2")],
            )
        })
        .await
        .expect("a fenced checkpoint after the clear");
    assert!(outcome.instance_etag.is_some());
    assert_eq!(load(s, "orch-b").await.events.len(), 1);
    let got = instance(s, "orch-b").await.expect("the new row");
    assert_eq!(got.input, json("{\"n\":2}"));
    let bodies: Vec<String> = dequeue(s, QueueName::Control(1), 32)
        .await
        .into_iter()
        .map(|d| d.body)
        .collect();
    assert_eq!(bodies, vec!["next".to_owned()]);
}
