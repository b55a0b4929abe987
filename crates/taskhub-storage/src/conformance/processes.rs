//! Cases for `ProcessStore`: the registry of the processes serving a hub.

use std::time::Duration;

use super::fixtures::{advance, START};
use crate::clock::{Clock, ManualClock};
use crate::error::StorageError;
use crate::processes::{ProcessAnnouncement, ProcessKind, ProcessRecord};
use crate::store::TaskHubStore;

fn process(id: &str, kind: ProcessKind) -> ProcessAnnouncement {
    ProcessAnnouncement {
        id: id.into(),
        kind,
        host: "host-a".into(),
        pid: 4242,
        build_version: "9.8.7".into(),
    }
}

/// Creates a hub of one partition and announces the process "p" of `kind` on it; its record.
async fn hub_with_process_p(s: &dyn TaskHubStore, kind: ProcessKind) -> ProcessRecord {
    s.create_hub(1, START).await.expect("create_hub");
    s.announce_process(&process("p", kind))
        .await
        .expect("announce")
}

fn assert_announced(record: &ProcessRecord, announced: &ProcessAnnouncement, schema: u32) {
    assert_eq!(record.id, announced.id);
    assert_eq!(record.kind, announced.kind);
    assert_eq!(record.host, announced.host);
    assert_eq!(record.pid, announced.pid);
    assert_eq!(record.build_version, announced.build_version);
    assert_eq!(record.schema_version, schema, "the build's schema version");
}

/// `announce_process` MUST store the record with this build's schema version and the store's
/// time as `started_at` and `heartbeat_at`; `list_processes` MUST return every record ordered
/// by ID.
pub async fn announced_processes_are_listed_with_this_builds_schema(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    s.create_hub(1, START).await.expect("create_hub");
    let worker = process("p-2-worker", ProcessKind::Worker);
    let grpc = process("p-1-grpc", ProcessKind::Grpc);
    let w = s.announce_process(&worker).await.expect("announce worker");
    let g = s.announce_process(&grpc).await.expect("announce grpc");
    let schema = s.schema_supported();
    assert_announced(&w, &worker, schema);
    assert_announced(&g, &grpc, schema);
    assert_eq!(w.started_at, w.heartbeat_at);
    if !s.owns_time() {
        assert_eq!(w.heartbeat_at, clock.now(), "the store's clock");
    }
    let listed = s.list_processes().await.expect("list_processes");
    assert_eq!(listed, vec![g, w], "ordered by ID");
}

/// `announce_process` MUST replace a record of the same ID.
pub async fn announcing_again_replaces_the_record(s: &dyn TaskHubStore, _clock: &ManualClock) {
    hub_with_process_p(s, ProcessKind::Serve).await;
    let mut again = process("p", ProcessKind::Http);
    again.pid = 7;
    let stored = s.announce_process(&again).await.expect("announce again");
    let listed = s.list_processes().await.expect("list_processes");
    assert_eq!(listed, vec![stored.clone()]);
    assert_announced(&stored, &again, s.schema_supported());
}

/// `heartbeat_process` MUST set `heartbeat_at` to the store's time, keep the other fields and
/// return the record.
pub async fn heartbeat_renews_the_time_and_keeps_the_rest(
    s: &dyn TaskHubStore,
    clock: &ManualClock,
) {
    let announced = hub_with_process_p(s, ProcessKind::Worker).await;
    advance(s, clock, Duration::from_secs(2)).await;
    let beat = s.heartbeat_process("p").await.expect("heartbeat");
    if s.owns_time() {
        // The server's clock, or (Azure) the manual one the case does not move.
        assert!(beat.heartbeat_at >= announced.heartbeat_at, "{beat:?}");
    } else {
        assert_eq!(beat.heartbeat_at, clock.now(), "the store's clock");
        assert!(beat.heartbeat_at > announced.heartbeat_at, "{beat:?}");
    }
    assert_eq!(
        ProcessRecord {
            heartbeat_at: announced.heartbeat_at,
            ..beat.clone()
        },
        announced,
        "every other field kept"
    );
    let listed = s.list_processes().await.expect("list_processes");
    assert_eq!(listed, vec![beat]);
}

/// `forget_process` MUST remove the record and report whether it existed; `heartbeat_process`
/// of a forgotten process MUST fail with `NotFound`.
pub async fn a_forgotten_process_is_gone_and_its_heartbeat_not_found(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    hub_with_process_p(s, ProcessKind::Worker).await;
    s.announce_process(&process("q", ProcessKind::Worker))
        .await
        .expect("announce");
    assert!(s.forget_process("p").await.expect("forget"));
    assert!(!s.forget_process("p").await.expect("forget again"));
    let err = s.heartbeat_process("p").await.expect_err("heartbeat");
    assert!(matches!(err, StorageError::NotFound { .. }), "{err:?}");
    let ids: Vec<String> = s
        .list_processes()
        .await
        .expect("list_processes")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["q"]);
}

/// `stored_schema` MUST be the build's version on a hub this build created.
pub async fn a_new_hub_is_at_the_supported_schema(s: &dyn TaskHubStore, _clock: &ManualClock) {
    s.create_hub(1, START).await.expect("create_hub");
    assert_eq!(
        s.stored_schema().await.expect("stored_schema"),
        s.schema_supported()
    );
}

/// `clear_hub` leaves the process records as they are.
pub async fn clearing_the_hub_keeps_the_process_records(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let record = hub_with_process_p(s, ProcessKind::Serve).await;
    s.clear_hub().await.expect("clear_hub");
    assert_eq!(s.list_processes().await.expect("list"), vec![record]);
    s.heartbeat_process("p")
        .await
        .expect("heartbeat after clear");
}
