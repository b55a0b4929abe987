//! The stable, bounded counterpart of the fuzz target `fuzz/fuzz_targets/requests.rs`: random
//! bytes, and valid encodings of an SDK worker's answer with bytes changed, go through
//! `taskhub_grpc::fuzzing::decode_and_convert` (every request type's decoding and the
//! conversion the endpoint runs on it) without a panic. The coverage-guided run, for longer:
//! `cargo +nightly fuzz run requests -- -max_total_time=60` in `crates/taskhub-grpc/fuzz`
//! (docs/OTHER_LANGUAGES.md, "How it runs": "Limits against hostile clients").

use proptest::prelude::*;
use prost::Message;
use taskhub_grpc::fuzzing::decode_and_convert;
use taskhub_grpc::proto::{
    orchestrator_action::OrchestratorActionType as A, CompleteOrchestrationAction,
    CreateTimerAction, OrchestratorAction, OrchestratorResponse, ScheduleTaskAction,
};

/// A well-formed answer with one action of several kinds, for the mutations to start from.
fn valid_answer() -> Vec<u8> {
    let action = |id, kind| OrchestratorAction {
        id,
        orchestrator_action_type: Some(kind),
    };
    OrchestratorResponse {
        instance_id: "fuzzed".into(),
        actions: vec![
            action(
                0,
                A::ScheduleTask(ScheduleTaskAction {
                    name: "SayHello".into(),
                    input: Some("\"Tokyo\"".into()),
                    ..ScheduleTaskAction::default()
                }),
            ),
            action(
                1,
                A::CreateTimer(CreateTimerAction {
                    fire_at: Some(prost_types::Timestamp {
                        seconds: 1_700_000_000,
                        nanos: 0,
                    }),
                }),
            ),
            action(
                2,
                A::CompleteOrchestration(CompleteOrchestrationAction {
                    orchestration_status: 1,
                    result: Some("[1,2]".into()),
                    ..CompleteOrchestrationAction::default()
                }),
            ),
        ],
        custom_status: Some("{\"step\":1}".into()),
        ..OrchestratorResponse::default()
    }
    .encode_to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3_000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..2_048)) {
        decode_and_convert(&data);
    }

    #[test]
    fn a_valid_answer_with_bytes_changed_never_panics(
        changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut data = valid_answer();
        let len = data.len();
        for (at, byte) in changes {
            data[at % len] = byte;
        }
        data.truncate(cut % (len + 1));
        decode_and_convert(&data);
    }
}

#[test]
fn the_valid_answer_decodes() {
    // The mutations start from a real answer, not from bytes that never decode.
    let data = valid_answer();
    assert_eq!(
        OrchestratorResponse::decode(&data[..])
            .unwrap()
            .actions
            .len(),
        3
    );
    decode_and_convert(&data);
}
