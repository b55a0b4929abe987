//! The dequeue's plan: the visibility bound (`visible_at <= now`, on the server's clock) is an
//! index condition, not a filter over every message of the queue (it would be with the
//! volatile `clock_timestamp()`, which cost hello5 most of the server's CPU). Run with
//! `scripts/with-postgres.sh cargo test -p taskhub-postgres --test plans`.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dequeue_bounds_its_index_scan_by_visibility() {
    let store = common::fresh_store(taskhub_storage::conformance::start_clock()).await;
    let plan = store.explain_dequeue().await.unwrap();
    let bound = plan
        .lines()
        .any(|l| l.contains("Index Cond") && l.contains("visible_at <="));
    assert!(bound, "{plan}");
    assert!(!plan.contains("Filter: (visible_at"), "{plan}");
}
