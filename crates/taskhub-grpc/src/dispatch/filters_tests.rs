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
