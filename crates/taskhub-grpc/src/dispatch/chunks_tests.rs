#![allow(
    clippy::unwrap_used,
    deprecated,
    reason = "test code; the chunking fields"
)]

use super::*;
use crate::proto::orchestrator_action::OrchestratorActionType as A;
use crate::proto::CreateTimerAction;

const ROOMY: ChunkLimits = ChunkLimits {
    actions: 100,
    bytes: 1 << 20,
};

fn action(id: i32) -> OrchestratorAction {
    OrchestratorAction {
        id,
        orchestrator_action_type: Some(A::CreateTimer(CreateTimerAction::default())),
    }
}

/// Part `index` with actions `ids`, partial unless `last`.
fn part(index: Option<i32>, ids: &[i32], last: bool) -> OrchestratorResponse {
    OrchestratorResponse {
        instance_id: "o1".into(),
        completion_token: "t".into(),
        custom_status: Some("\"s\"".into()),
        actions: ids.iter().map(|i| action(*i)).collect(),
        is_partial: !last,
        chunk_index: index,
        ..OrchestratorResponse::default()
    }
}

fn ids(r: &OrchestratorResponse) -> Vec<i32> {
    r.actions.iter().map(|a| a.id).collect()
}

#[test]
fn parts_in_order_make_one_answer_with_every_action_in_order() {
    let mut a = Assembly::default();
    assert!(a
        .add(part(Some(0), &[0, 1], false), ROOMY)
        .unwrap()
        .is_none());
    assert!(a.add(part(Some(1), &[2], false), ROOMY).unwrap().is_none());
    let whole = a.add(part(Some(2), &[3, 4], true), ROOMY).unwrap().unwrap();
    assert_eq!(ids(&whole), [0, 1, 2, 3, 4]);
    assert_eq!(whole.instance_id, "o1");
    assert_eq!(whole.custom_status.as_deref(), Some("\"s\""));
    assert!(!whole.is_partial);
    assert_eq!(whole.chunk_index, None);
    // The assembly is empty again: a new sequence starts at 0.
    assert!(a.add(part(Some(0), &[7], false), ROOMY).unwrap().is_none());
}

#[test]
fn a_part_out_of_order_is_refused_naming_the_expected_index_and_drops_the_parts() {
    let mut a = Assembly::default();
    a.add(part(Some(0), &[0], false), ROOMY).unwrap();
    let e = a.add(part(Some(2), &[1], false), ROOMY).unwrap_err();
    assert_eq!(
        e,
        ChunkError::OutOfOrder {
            expected: 1,
            got: 2
        }
    );
    assert!(
        e.to_string()
            .contains("part 2 came where part 1 was expected"),
        "{e}"
    );
    // Dropped: part 1 now is out of order too, and a fresh start works.
    assert!(a.add(part(Some(1), &[1], false), ROOMY).is_err());
    a.add(part(Some(0), &[0], false), ROOMY).unwrap();
    let whole = a.add(part(Some(1), &[1], true), ROOMY).unwrap().unwrap();
    assert_eq!(ids(&whole), [0, 1]);
}

#[test]
fn a_sequence_never_begun_or_a_part_without_an_index_is_refused() {
    let mut a = Assembly::default();
    assert_eq!(
        a.add(part(Some(3), &[0], true), ROOMY).unwrap_err(),
        ChunkError::OutOfOrder {
            expected: 0,
            got: 3
        }
    );
    assert_eq!(
        a.add(part(None, &[0], false), ROOMY).unwrap_err(),
        ChunkError::NoIndex
    );
}

#[test]
fn parts_over_the_bounds_are_refused_naming_the_setting() {
    let few = ChunkLimits {
        actions: 3,
        bytes: 1 << 20,
    };
    let mut a = Assembly::default();
    a.add(part(Some(0), &[0, 1], false), few).unwrap();
    let e = a.add(part(Some(1), &[2, 3], true), few).unwrap_err();
    assert!(e.to_string().contains("grpc_max_actions_per_turn"), "{e}");
    let small = ChunkLimits {
        actions: 100,
        bytes: 40,
    };
    let mut a = Assembly::default();
    a.add(part(Some(0), &[0], false), small).unwrap();
    let e = a.add(part(Some(1), &[1, 2, 3], true), small).unwrap_err();
    assert!(e.to_string().contains("grpc_chunked_answer_mib"), "{e}");
}

#[test]
fn only_chunked_parts_are_parts() {
    assert!(is_part(&part(Some(0), &[], false)));
    assert!(is_part(&part(Some(2), &[], true)));
    assert!(!is_part(&part(None, &[], true)));
    // Index 0 and not partial: a whole answer in one part.
    assert!(!is_part(&part(Some(0), &[], true)));
}
