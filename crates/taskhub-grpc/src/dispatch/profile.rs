//! What a connecting SDK worker can take, decided in one place from its `GetWorkItems`
//! request and its call's metadata: how many items of each kind it may hold, whether it is
//! sent health pings, and the connection its completions without a token are matched on.
//!
//! The one worker told apart by its metadata is the Go SDK (`github.com/microsoft/durabletask-go`
//! v0.6.0, `client/worker_grpc.go`): its generated protos predate health pings and entities
//! (`WorkItem` has only the orchestrator, activity and V1 entity requests, and its loop logs
//! anything else as an "unknown work item type" and drops it) and its `GetWorkItemsRequest`
//! has no fields at all. So a stream from a gRPC-Go client (`user-agent` holding `grpc-go/`)
//! gets no health pings, and entity batches only if it declared entity capacity; every other
//! client gets both, a capacity of 0 meaning the default.

use tonic::metadata::MetadataMap;

use super::settings::DispatcherSettings;
use super::state::StreamInfo;
use crate::proto::GetWorkItemsRequest;

/// The capacities (orchestration, activity, entity) and the stream's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Whether the call comes from a gRPC-Go client (see the module docs).
fn is_grpc_go(metadata: &MetadataMap) -> bool {
    metadata
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ua| ua.contains("grpc-go/"))
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
    let go = is_grpc_go(metadata);
    let entity_default = if go { 0 } else { s.default_entity_capacity };
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
            health_pings: !go,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn metadata(user_agent: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("user-agent", user_agent.parse().unwrap());
        m
    }

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
                health_pings: false
            }
        );
        let declared = GetWorkItemsRequest {
            max_concurrent_entity_work_items: 4,
            ..GetWorkItemsRequest::default()
        };
        assert_eq!(profile(&declared, &go, None, &s).unwrap().capacity[2], 4);
        // An application's own user agent comes first.
        let custom = metadata("my-app/2 grpc-go/1.56.3");
        assert!(!profile(&declared, &custom, None, &s).unwrap().info.health_pings);
    }

    #[test]
    fn other_sdks_get_pings_and_the_default_entity_capacity() {
        let s = DispatcherSettings::default();
        for ua in ["grpc-python/1.66.0 grpc-c/43.0.0", "grpc-node-js/1.12.6"] {
            let p = profile(&GetWorkItemsRequest::default(), &metadata(ua), None, &s).unwrap();
            assert_eq!(p.capacity, [100, 100, 100], "{ua}");
            assert!(p.info.health_pings, "{ua}");
        }
        let p = profile(&GetWorkItemsRequest::default(), &MetadataMap::new(), None, &s).unwrap();
        assert!(p.info.health_pings);
    }

    #[test]
    fn a_negative_capacity_is_refused_naming_the_field() {
        let r = GetWorkItemsRequest {
            max_concurrent_activity_work_items: -1,
            ..GetWorkItemsRequest::default()
        };
        let e = profile(&r, &MetadataMap::new(), None, &DispatcherSettings::default())
            .unwrap_err();
        assert!(e.starts_with("maxConcurrentActivityWorkItems: -1 is negative"), "{e}");
    }
}
