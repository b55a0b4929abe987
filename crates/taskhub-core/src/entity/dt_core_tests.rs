#![allow(clippy::unwrap_used, reason = "test code")]

use super::*;

fn sender() -> Caller {
    Caller {
        instance_id: InstanceId::new("orch").unwrap(),
        execution_id: ExecutionId::new("e1").unwrap(),
    }
}

fn json(text: &str) -> Payload {
    Payload::from_json(text).unwrap()
}

/// The `op` event with JSON `text` and, sent by the orchestration [`sender`], its request.
fn from_orchestration(text: &str) -> (Payload, EntityRequest) {
    let m = json(text);
    let r = request_of_event("op", &m, Some(&sender())).unwrap();
    (m, r)
}

/// What `EntityConversions.EncodeOperationCalled` writes (a .NET orchestration's call).
#[test]
fn a_call_names_its_parent_and_keeps_its_input_as_sent() {
    let (m, r) = from_orchestration(
        r#"{"op":"add","signal":false,"input":"5","id":"6f1c2b8e-0000-4000-8000-000000000001","parent":"orch","parentExecution":"e9"}"#,
    );
    let EntityRequest::Operation {
        id,
        op,
        input,
        caller,
        at,
    } = r
    else {
        panic!("{r:?}")
    };
    assert_eq!(id, "6f1c2b8e-0000-4000-8000-000000000001");
    assert_eq!((op.as_str(), input.as_str()), ("add", "5"));
    let caller = caller.unwrap();
    assert_eq!(
        (caller.instance_id.as_str(), caller.execution_id.as_str()),
        ("orch", "e9")
    );
    assert_eq!(at, None);
    assert_eq!(
        sent_request_id("op", &m).as_deref(),
        Some("6f1c2b8e-0000-4000-8000-000000000001")
    );
}

#[test]
fn a_signal_has_no_caller_and_a_scheduled_one_its_time() {
    let m = json(r#"{"op":"reset","signal":true,"id":"s1"}"#);
    let r = request_of_event("op@2030-01-02T03:04:05.0000000Z", &m, Some(&sender())).unwrap();
    let EntityRequest::Operation {
        caller, at, input, ..
    } = r
    else {
        panic!("{r:?}")
    };
    assert_eq!(caller, None);
    assert_eq!(input, Payload::null());
    assert_eq!(at.unwrap().as_millis(), 1_893_553_445_000);
    // Nobody waits for a signal's answer.
    assert_eq!(sent_request_id("op", &m), None);
}

#[test]
fn a_lock_request_and_its_release() {
    let (m, r) = from_orchestration(
        r#"{"op":null,"id":"cs1","lockset":[{"name":"account","key":"a"},{"name":"account","key":"b"}],"pos":1,"parent":"orch"}"#,
    );
    let EntityRequest::Lock {
        id,
        owner,
        lockset,
        position,
    } = r
    else {
        panic!("{r:?}")
    };
    assert_eq!((id.as_str(), position), ("cs1", 1));
    assert_eq!(owner, sender());
    let ids: Vec<String> = lockset.iter().map(ToString::to_string).collect();
    assert_eq!(ids, ["@account@a", "@account@b"]);
    assert_eq!(sent_request_id("op", &m).as_deref(), Some("cs1"));

    let release = json(r#"{"id":"cs1","parent":"orch"}"#);
    let r = request_of_event("release", &release, None).unwrap();
    assert_eq!(
        r,
        EntityRequest::Release {
            id: "cs1".into(),
            owner: InstanceId::new("orch").unwrap()
        }
    );
    assert_eq!(sent_request_id("release", &release), None);
}

#[test]
fn other_events_are_not_entity_messages() {
    let m = json(r#"{"op":"add","id":"x"}"#);
    assert_eq!(request_of_event("Approval", &m, None), None);
    assert_eq!(request_of_event("op", &json("42"), None), None);
    assert_eq!(
        request_of_event("op", &Payload::from_text("blob:v1:c:b"), None),
        None
    );
    assert_eq!(sent_request_id("opx", &m), None);
}

#[test]
fn a_message_that_names_another_parent_than_its_sender_is_not_taken() {
    let m = json(r#"{"op":null,"id":"cs1","lockset":["@account@a"],"pos":0,"parent":"victim"}"#);
    assert_eq!(request_of_event("op", &m, Some(&sender())), None);
    let call = json(r#"{"op":"add","id":"x","parent":"victim","parentExecution":"e1"}"#);
    assert_eq!(request_of_event("op", &call, Some(&sender())), None);
}
