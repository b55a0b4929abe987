//! What a connecting SDK worker can take, decided in one place from its `GetWorkItems`
//! request and its call's metadata: how many items of each kind it may hold, whether it is
//! sent health pings, and the connection its completions without a token are matched on.
//!
//! Two workers are told apart by the `user-agent` of their gRPC library (`crate::library`):
//! * the Go SDK (`github.com/microsoft/durabletask-go` v0.6.0, `client/worker_grpc.go`,
//!   `grpc-go/`): its generated protos predate health pings and entities (`WorkItem` has only
//!   the orchestrator, activity and V1 entity requests; its loop logs anything else as an
//!   "unknown work item type" and drops it) and its `GetWorkItemsRequest` has no fields;
//! * the Java SDK (`com.microsoft:durabletask-client` 1.5.0, `DurableTaskGrpcWorker.java`,
//!   `startAndBlock`, `grpc-java-`): the same, and it runs every orchestration turn and
//!   activity inline on the thread that reads the stream, one after the other.
//!
//! So a stream from either gets no health pings, and entity batches only if it declared
//! entity capacity. A Java stream that declared no orchestration or activity capacity is
//! handed **one item at a time** (orchestration or activity): anything more would wait inside
//! the worker behind what it runs, its hold timer running, and a turn queued behind a long
//! activity would time out there; here it waits for the worker instead, and past
//! `busy_wait` goes back to its queue uncounted (`wait.rs`). Every other client gets pings and
//! entities, a capacity of 0 meaning the default.

use tonic::metadata::MetadataMap;

use super::filters::Filters;
use super::settings::DispatcherSettings;
use super::state::StreamInfo;
use crate::library::Library;
use crate::proto::{GetWorkItemsRequest, WorkerCapability};

/// The capacities (orchestration, activity, entity) and the stream's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Profile {
    /// The most items of each kind the stream may hold.
    pub(crate) capacity: [usize; 3],
    /// The rest of what the dispatcher knows of it.
    pub(crate) info: StreamInfo,
}

/// A declared concurrency: 0 is `default`, a negative one is refused (the field named).
fn capacity(declared: i32, field: &str, default: usize) -> Result<usize, String> {
    match usize::try_from(declared) {
        Ok(0) => Ok(default),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{field}: {declared} is negative (0 means the default, {default})"
        )),
    }
}

/// The profile of a worker connecting with `request` and `metadata` on `connection`.
///
/// # Errors
/// A message naming a negative capacity.
pub(crate) fn profile(
    request: &GetWorkItemsRequest,
    metadata: &MetadataMap,
    connection: Option<u64>,
    s: &DispatcherSettings,
) -> Result<Profile, String> {
    let lib = Library::of(metadata);
    let legacy = lib != Library::Other;
    let entity_default = if legacy { 0 } else { s.default_entity_capacity };
    let serial = lib == Library::Java
        && request.max_concurrent_orchestration_work_items == 0
        && request.max_concurrent_activity_work_items == 0;
    Ok(Profile {
        capacity: [
            capacity(
                request.max_concurrent_orchestration_work_items,
                "maxConcurrentOrchestrationWorkItems",
                s.default_orchestration_capacity,
            )?,
            capacity(
                request.max_concurrent_activity_work_items,
                "maxConcurrentActivityWorkItems",
                s.default_activity_capacity,
            )?,
            capacity(
                request.max_concurrent_entity_work_items,
                "maxConcurrentEntityWorkItems",
                entity_default,
            )?,
        ],
        info: StreamInfo {
            connection,
            health_pings: !legacy,
            one_at_a_time: serial,
            filters: Filters::from_proto(request.work_item_filters.as_ref()),
            history_streaming: request
                .capabilities
                .contains(&(WorkerCapability::HistoryStreaming as i32)),
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    use crate::library::user_agent as metadata;

    #[test]
    fn the_go_sdk_gets_no_pings_and_no_entities_unless_it_declares_them() {
        let s = DispatcherSettings::default();
        let go = metadata("grpc-go/1.56.3");
        let p = profile(&GetWorkItemsRequest::default(), &go, Some(7), &s).unwrap();
        assert_eq!(p.capacity, [100, 100, 0]);
        assert_eq!(
            p.info,
            StreamInfo {
                connection: Some(7),
                health_pings: false,
                one_at_a_time: false,
                filters: Filters::default(),
                history_streaming: false,
            }
        );
        let declared = GetWorkItemsRequest {
            max_concurrent_entity_work_items: 4,
            ..GetWorkItemsRequest::default()
        };
        assert_eq!(profile(&declared, &go, None, &s).unwrap().capacity[2], 4);
        // An application's own user agent comes first.
        let custom = metadata("my-app/2 grpc-go/1.56.3");
        assert!(
            !profile(&declared, &custom, None, &s)
                .unwrap()
                .info
                .health_pings
        );
    }

    #[test]
    fn the_java_sdk_is_handed_one_item_at_a_time_unless_it_declares_capacity() {
        let s = DispatcherSettings::default();
        let java = metadata("grpc-java-netty/1.59.0");
        let p = profile(&GetWorkItemsRequest::default(), &java, None, &s).unwrap();
        assert!(p.info.one_at_a_time);
        assert!(!p.info.health_pings);
        assert_eq!(p.capacity[2], 0);
        let declared = GetWorkItemsRequest {
            max_concurrent_activity_work_items: 8,
            ..GetWorkItemsRequest::default()
        };
        let p = profile(&declared, &java, None, &s).unwrap();
        assert!(!p.info.one_at_a_time);
        assert_eq!(p.capacity[..2], [100, 8]);
    }

    #[test]
    fn other_sdks_get_pings_and_the_default_entity_capacity() {
        let s = DispatcherSettings::default();
        for ua in ["grpc-python/1.66.0 grpc-c/43.0.0", "grpc-node-js/1.12.6"] {
            let p = profile(&GetWorkItemsRequest::default(), &metadata(ua), None, &s).unwrap();
            assert_eq!(p.capacity, [100, 100, 100], "{ua}");
            assert!(p.info.health_pings, "{ua}");
            assert!(!p.info.one_at_a_time, "{ua}");
        }
        let p = profile(
            &GetWorkItemsRequest::default(),
            &MetadataMap::new(),
            None,
            &s,
        )
        .unwrap();
        assert!(p.info.health_pings);
    }

    #[test]
    fn a_negative_capacity_is_refused_naming_the_field() {
        let r = GetWorkItemsRequest {
            max_concurrent_activity_work_items: -1,
            ..GetWorkItemsRequest::default()
        };
        let e = profile(
            &r,
            &MetadataMap::new(),
            None,
            &DispatcherSettings::default(),
        )
        .unwrap_err();
        assert!(
            e.starts_with("maxConcurrentActivityWorkItems: -1 is negative"),
            "{e}"
        );
    }
}
