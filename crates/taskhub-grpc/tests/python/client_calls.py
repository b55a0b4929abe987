"""The official Durable Task Python SDK's client against Taskhub's gRPC endpoint.

Run by tests/python_sdk.rs (under scripts/with-python-sdk.sh) as
`python client_calls.py HOST:PORT`, against a Taskhub worker that runs the Rust
orchestrations of tests/common/mod.rs. Every check is an assert: any failure exits non-zero.
"""

import json
import sys
import time
from datetime import datetime, timedelta, timezone

import grpc
from checks import check, report, until
from durabletask.client import (OrchestrationQuery, OrchestrationStatus,
                                TaskHubGrpcClient)
from durabletask.entities import EntityInstanceId

c = TaskHubGrpcClient(host_address=sys.argv[1])


# schedule_new_orchestration with input, instance ID, tags and version; wait; get.
iid = c.schedule_new_orchestration("Echo", input={"city": "Tokyo", "n": 3},
                                   instance_id="py-echo", tags={"team": "blue"},
                                   version="1.0")
assert iid == "py-echo", iid
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.runtime_status == OrchestrationStatus.COMPLETED, st
assert json.loads(st.serialized_output) == {"city": "Tokyo", "n": 3}, st.serialized_output
assert json.loads(st.serialized_input) == {"city": "Tokyo", "n": 3}
assert st.get_custom_status() == {"city": "Tokyo", "n": 3}
assert st.failure_details is None
st = c.get_orchestration_state(iid)
assert st.name == "Echo" and st.runtime_status == OrchestrationStatus.COMPLETED
assert c.get_orchestration_state("py-nobody") is None
check("schedule with input, ID, tags, version; wait; get")

# No input: None, as the SDK sends and expects it. The Rust `Echo` reads it as null and
# returns that null: a value, so "null" (issue 34: a JSON null is kept, not dropped).
iid = c.schedule_new_orchestration("Echo", instance_id="py-none")
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.serialized_input is None and st.serialized_output == "null", st
assert st.get_output() is None, st
check("no input is None")

# A generated ID, activities in sequence.
iid = c.schedule_new_orchestration("Hello")
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.get_output() == ["Hello Tokyo!", "Hello Seattle!", "Hello London!"], st.serialized_output
hello_id = iid
check("activity sequence")

# History of that instance.
events = c.get_orchestration_history(hello_id)
kinds = [type(e).__name__ for e in events]
assert "ExecutionStartedEvent" in kinds, kinds
assert kinds.count("TaskScheduledEvent") == 3 and kinds.count("TaskCompletedEvent") == 3, kinds
scheduled = [e.event_id for e in events if type(e).__name__ == "TaskScheduledEvent"]
completed = [e.task_scheduled_id for e in events if type(e).__name__ == "TaskCompletedEvent"]
assert scheduled == completed, (scheduled, completed)
check("history")

# A failure with its details.
iid = c.schedule_new_orchestration("Fails", instance_id="py-fails")
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.runtime_status == OrchestrationStatus.FAILED, st
assert "Kah-BOOOOM!!!" in st.failure_details.message, st.failure_details
check("failure details")

# A scheduled start: Pending until then; the wait for start times out meanwhile.
at = datetime.now(timezone.utc) + timedelta(seconds=2)
iid = c.schedule_new_orchestration("Echo", input=1, instance_id="py-later", start_at=at)
assert c.get_orchestration_state(iid).runtime_status == OrchestrationStatus.PENDING
try:
    c.wait_for_orchestration_start(iid, timeout=0.5)
    raise AssertionError("the wait for start did not time out")
except TimeoutError:
    pass
st = c.wait_for_orchestration_start(iid, timeout=30)
assert st.runtime_status in (OrchestrationStatus.RUNNING, OrchestrationStatus.COMPLETED), st
assert datetime.now(timezone.utc) >= at
assert c.wait_for_orchestration_completion(iid, timeout=60).get_output() == 1
check("start time")

# An orchestration that waits for an event.
iid = c.schedule_new_orchestration("Waiter", instance_id="py-wait")
c.wait_for_orchestration_start(iid, timeout=30)
try:
    c.wait_for_orchestration_completion(iid, timeout=0.5)
    raise AssertionError("the wait for completion did not time out")
except TimeoutError:
    pass
c.raise_orchestration_event(iid, "Go", data={"approved": True})
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.get_output() == {"approved": True}, st.serialized_output
check("raise event")

# Suspend and resume: an event raised while suspended waits for the resume.
iid = c.schedule_new_orchestration("Waiter", instance_id="py-suspend")
c.wait_for_orchestration_start(iid, timeout=30)
c.suspend_orchestration(iid, reason="maintenance")
until(lambda: c.get_orchestration_state(iid).runtime_status == OrchestrationStatus.SUSPENDED,
      "SUSPENDED", timeout=30.0)
c.raise_orchestration_event(iid, "Go", data=7)
time.sleep(0.5)
assert c.get_orchestration_state(iid).runtime_status == OrchestrationStatus.SUSPENDED
c.resume_orchestration(iid)
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.runtime_status == OrchestrationStatus.COMPLETED and st.get_output() == 7, st
check("suspend and resume")

# Terminate (the SDK's default is recursive): the root and its sub-orchestration.
iid = c.schedule_new_orchestration("Tree", instance_id="py-tree")
child = until(lambda: [s for s in c.get_all_orchestration_states(OrchestrationQuery(
    instance_id_prefix="py-tree:", runtime_status=[OrchestrationStatus.RUNNING]))], "the child", timeout=30.0)[0]
c.terminate_orchestration(iid, output="stop")
st = c.wait_for_orchestration_completion(iid, timeout=60)
assert st.runtime_status == OrchestrationStatus.TERMINATED and st.get_output() == "stop", st
st = c.wait_for_orchestration_completion(child.instance_id, timeout=60)
assert st.runtime_status == OrchestrationStatus.TERMINATED, st
check("terminate (recursive)")

# Query with paging (pages of 2) and list instance IDs with paging.
for i in range(5):
    c.schedule_new_orchestration("Echo", input=i, instance_id=f"py-q-{i}")
for i in range(5):
    c.wait_for_orchestration_completion(f"py-q-{i}", timeout=60)
states = c.get_all_orchestration_states(OrchestrationQuery(
    instance_id_prefix="py-q-", max_instance_count=2, fetch_inputs_and_outputs=True))
assert sorted(s.instance_id for s in states) == [f"py-q-{i}" for i in range(5)], states
assert sorted(s.get_output() for s in states) == [0, 1, 2, 3, 4]
running = c.get_all_orchestration_states(OrchestrationQuery(
    runtime_status=[OrchestrationStatus.RUNNING]))
assert all(s.runtime_status == OrchestrationStatus.RUNNING for s in running)
ids, token, pages = [], None, 0
while True:
    page = c.list_instance_ids(page_size=2, continuation_token=token)
    ids += page.items
    pages += 1
    token = page.continuation_token
    if not token:
        break
    assert pages < 50
assert {f"py-q-{i}" for i in range(5)} <= set(ids), ids
assert "py-echo" in ids and pages >= 3, (ids, pages)
check("query and list IDs with paging")

# Restart, same ID and new ID.
assert c.restart_orchestration("py-echo") == "py-echo"
st = c.wait_for_orchestration_completion("py-echo", timeout=60)
assert st.get_output() == {"city": "Tokyo", "n": 3}
new_id = c.restart_orchestration("py-echo", restart_with_new_instance_id=True)
assert new_id != "py-echo"
assert c.wait_for_orchestration_completion(new_id, timeout=60).runtime_status == OrchestrationStatus.COMPLETED
check("restart")

# Purge one (recursive by default), then by filter.
r = c.purge_orchestration("py-none")
assert r.deleted_instance_count == 1 and r.is_complete is True, r
assert c.get_orchestration_state("py-none") is None
r = c.purge_orchestration("py-tree")
assert r.deleted_instance_count == 2, r
r = c.purge_orchestrations_by(runtime_status=[OrchestrationStatus.FAILED])
assert r.deleted_instance_count == 1 and r.is_complete is True, r
assert c.get_orchestration_state("py-fails") is None
check("purge")

# Entities: signal, get, query (the SDK lowercases entity names).
counter = EntityInstanceId("counter", "py")
c.signal_entity(counter, "add", input=5)
c.signal_entity(counter, "add", input=2)
until(lambda: (m := c.get_entity(counter)) is not None and m.get_state(int) == 7, "counter = 7",
      timeout=30.0)
assert c.get_entity(EntityInstanceId("counter", "nobody")) is None
found = c.get_all_entities()
assert [str(m.id) for m in found] == ["@counter@py"], [str(m.id) for m in found]
check("entities")

# Only a Failed instance can be rewound: FAILED_PRECONDITION naming the status; an unknown
# one is NOT_FOUND (rewinds that run: tests/python/rewind_scenarios.py).
try:
    c.rewind_orchestration("py-echo")
    raise AssertionError("rewind was accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.FAILED_PRECONDITION, e
    assert "Completed" in e.details(), e.details()
try:
    c.rewind_orchestration("py-nobody", reason="why")
    raise AssertionError("rewind was accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.NOT_FOUND, e
check("rewind refused")

c.close()
report("client")
