#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;
use crate::proto::{ActivityFilter, EntityFilter, OrchestrationFilter};

fn filters() -> Filters {
    Filters::from_proto(Some(&WorkItemFilters {
        orchestrations: vec![
            OrchestrationFilter {
                name: "Greet".into(),
                versions: vec![],
            },
            OrchestrationFilter {
                name: "Pay".into(),
                versions: vec!["2.0".into(), "2.1".into()],
            },
        ],
        activities: vec![ActivityFilter {
            name: "SayHello".into(),
            versions: vec![],
        }],
        entities: vec![],
    }))
}

fn n(name: &str, version: Option<&str>) -> WorkName {
    WorkName::new(name, version.map(str::to_owned))
}

#[test]
fn no_filters_take_everything() {
    let f = Filters::from_proto(None);
    assert!(!f.any());
    assert!(f.take(Kind::Orchestration, Some(&n("Anything", Some("9")))));
    assert!(f.take(Kind::Entity, None));
}

#[test]
fn a_listed_name_takes_any_version_unless_versions_are_listed() {
    let f = filters();
    assert!(f.any());
    assert!(f.take(Kind::Orchestration, Some(&n("Greet", None))));
    assert!(f.take(Kind::Orchestration, Some(&n("Greet", Some("7")))));
    assert!(f.take(Kind::Orchestration, Some(&n("Pay", Some("2.1")))));
    assert!(!f.take(Kind::Orchestration, Some(&n("Pay", Some("3.0")))));
    assert!(!f.take(Kind::Orchestration, Some(&n("Pay", None))));
    // Names are compared as they are: another case is another orchestration.
    assert!(!f.take(Kind::Orchestration, Some(&n("greet", None))));
    // Not listed, or listed under the other kind.
    assert!(!f.take(Kind::Orchestration, Some(&n("SayHello", None))));
    assert!(f.take(Kind::Activity, Some(&n("SayHello", Some("1")))));
    // A name that could not be read goes to workers without filters only.
    assert!(!f.take(Kind::Activity, None));
}

#[test]
fn an_empty_list_takes_nothing_of_its_kind_and_entities_match_their_name_in_any_case() {
    let f = filters();
    assert!(!f.take(Kind::Entity, Some(&n("counter", None))));
    let e = Filters::from_proto(Some(&WorkItemFilters {
        entities: vec![EntityFilter {
            name: "Counter".into(),
        }],
        ..WorkItemFilters::default()
    }));
    let request = work_item::Request::EntityRequest(crate::proto::EntityBatchRequest {
        instance_id: "@counter@k1".into(),
        ..Default::default()
    });
    let name = WorkName::of_request(&request).unwrap();
    assert_eq!(name, n("counter", None));
    assert!(e.take(Kind::Entity, Some(&name)));
    assert!(!e.take(Kind::Orchestration, Some(&n("Greet", None))));
}

#[test]
fn an_activity_without_a_version_matches_a_versioned_activity_filter() {
    // What the SDKs send with strict versioning: the worker's version on its activities too.
    let f = Filters::from_proto(Some(&WorkItemFilters {
        activities: vec![ActivityFilter {
            name: "PyAct".into(),
            versions: vec!["2".into()],
        }],
        ..WorkItemFilters::default()
    }));
    assert!(f.take(Kind::Activity, Some(&n("PyAct", None))));
    assert!(f.take(Kind::Activity, Some(&n("PyAct", Some("2")))));
    assert!(!f.take(Kind::Activity, Some(&n("PyAct", Some("1")))));
    assert!(!f.take(Kind::Activity, Some(&n("Other", None))));
}

#[test]
fn an_activity_without_a_version_is_matched_by_its_orchestrations_version() {
    let mut versions = OrchestrationVersions::default();
    let turn = work_item::Request::OrchestratorRequest(crate::proto::OrchestratorRequest {
        instance_id: "o1".into(),
        ..Default::default()
    });
    let out = Outgoing {
        request: turn,
        past: crate::wire::EncodedEvents::new(),
        name: Some(n("Pay", Some("1"))),
    };
    assert_eq!(
        versions.name_of(Kind::Orchestration, &out),
        Some(n("Pay", Some("1")))
    );
    let activity = |instance: &str| {
        Outgoing::from(work_item::Request::ActivityRequest(
            crate::proto::ActivityRequest {
                name: "Charge".into(),
                orchestration_instance: Some(crate::proto::OrchestrationInstance {
                    instance_id: instance.into(),
                    execution_id: None,
                }),
                ..Default::default()
            },
        ))
    };
    assert_eq!(
        versions.name_of(Kind::Activity, &activity("o1")),
        Some(n("Charge", Some("1")))
    );
    // An orchestration not seen here: no version, so it matches by name.
    assert_eq!(
        versions.name_of(Kind::Activity, &activity("o2")),
        Some(n("Charge", None))
    );
}
