//! What the multi-process tests on PostgreSQL share (`postgres_workers.rs`,
//! `postgres_restart.rs`): their settings, the activity log, and the check of every instance.
//! Included as `#[path = "common/pg_workers.rs"] mod pg_workers;` next to `mod common;` and
//! `#[path = "common/backends.rs"] mod backends;`.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    reason = "test support"
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use taskhub::*;

use crate::backends;
use crate::common::{child, wait};

pub const SEQ: u64 = 3;
pub const FAN: u64 = 2;
/// How long any one wait of this test may take.
pub const BOUND: Duration = Duration::from_secs(180);

pub fn settings() -> Settings {
    Settings {
        control_queue_visibility_timeout: Duration::from_secs(3),
        // A killed worker's running activities come back after this.
        work_item_visibility_timeout: Duration::from_secs(5),
        lease_interval: Duration::from_secs(2),
        lease_renew_interval: Duration::from_millis(500),
        lease_acquire_interval: Duration::from_secs(1),
        partition_drain_timeout: Duration::from_secs(5),
        partition_count: 8,
        ..backends::settings(backends::Backend::Postgres)
    }
}

pub async fn owners(hub: &TaskHub) -> BTreeMap<u32, Option<String>> {
    hub.store()
        .list_partitions()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.partition, r.owner))
        .collect()
}

/// Activity runs logged so far.
pub fn logged_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("activity.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

pub async fn until_runs(dir: &Path, n: usize) {
    wait::until(
        &format!("{n} activity runs"),
        || logged_runs(dir) >= n,
        || logged_runs(dir),
    )
    .await;
}

/// Checks every instance: completed, the right output, a clean history.
pub async fn check_instances(hub: &TaskHub, ids: &[(InstanceId, u64)]) {
    let client = hub.client();
    for (id, base) in ids {
        let s = match client.wait_for_completion(id, BOUND).await {
            Ok(s) => s,
            Err(e) => panic!("{id} never finished: {e}; owners {:?}", owners(hub).await),
        };
        assert_eq!(s.status(), OrchestrationStatus::Completed, "{id}");
        assert_eq!(
            s.output::<u64>().unwrap(),
            Some(child::expected(*base, SEQ, FAN)),
            "{id}"
        );
        let history = client
            .get_status(id, StatusOptions { history: true })
            .await
            .unwrap()
            .unwrap()
            .history
            .unwrap();
        let count = |f: fn(&EventKind) -> bool| history.iter().filter(|e| f(&e.event)).count();
        assert_eq!(
            (
                count(|e| matches!(e, EventKind::ExecutionStarted { .. })),
                count(|e| matches!(e, EventKind::ExecutionCompleted { .. }))
            ),
            (1, 1),
            "{id}: one start and one completion"
        );
        let seen = child::task_event_counts(&history);
        assert_eq!(
            seen.len(),
            usize::try_from(2 * (SEQ + FAN)).unwrap(),
            "{id}: every task scheduled and completed"
        );
        assert!(
            seen.values().all(|c| *c == 1),
            "{id}: an event was applied twice"
        );
    }
    let letters = hub.store().list_dead_letters(None, 10).await.unwrap();
    assert!(letters.is_empty(), "dead-lettered: {letters:?}");
}
