"""The official Durable Task Python SDK as a WORKER against Taskhub's gRPC endpoint.

Run by tests/python_sdk_worker.rs (under scripts/with-python-sdk.sh) as
`python worker_scenarios.py HOST:PORT`, against a Taskhub worker whose registry is empty: every
orchestration and activity below runs in this process, Taskhub keeps their history, timers,
events and queues. Every check is an assert: any failure exits non-zero.
"""

import sys
import time
from datetime import timedelta

from checks import report, scenario, until
from durabletask import history, task, worker
from durabletask.client import (OrchestrationQuery, OrchestrationStatus,
                                TaskHubGrpcClient)

ADDR = sys.argv[1]


# Activities.

def hello(ctx: task.ActivityContext, city: str) -> str:
    return f"Hello {city}!"


def double(ctx: task.ActivityContext, x: int) -> int:
    return 2 * x


def boom(ctx: task.ActivityContext, _) -> None:
    raise ValueError("Kah-BOOOOM!!!")


ATTEMPTS: dict = {}


def flaky(ctx: task.ActivityContext, key: str) -> int:
    """Fails twice per key, then answers the attempt number."""
    ATTEMPTS[key] = ATTEMPTS.get(key, 0) + 1
    if ATTEMPTS[key] < 3:
        raise RuntimeError(f"attempt {ATTEMPTS[key]} fails")
    return ATTEMPTS[key]


FAILED_ONCE: set = set()


def fails_once(ctx: task.ActivityContext, key: str) -> str:
    """Fails the first call per key, then answers."""
    if key not in FAILED_ONCE:
        FAILED_ONCE.add(key)
        raise RuntimeError(f"first call for {key} fails")
    return f"ok: {key}"


# Orchestrations.

def sequence(ctx: task.OrchestrationContext, _):
    out = []
    for city in ["Tokyo", "Seattle", "London"]:
        out.append((yield ctx.call_activity(hello, input=city)))
    return out


def fan_out(ctx: task.OrchestrationContext, n: int):
    results = yield task.when_all([ctx.call_activity(double, input=i) for i in range(n)])
    return sum(results)


def parent(ctx: task.OrchestrationContext, _):
    child = yield ctx.call_sub_orchestrator(sequence, instance_id=f"{ctx.instance_id}:child")
    return {"child": child}


def tree(ctx: task.OrchestrationContext, _):
    return (yield ctx.call_sub_orchestrator(waiter, instance_id=f"{ctx.instance_id}:child"))


def sleeper(ctx: task.OrchestrationContext, seconds: float):
    start = ctx.current_utc_datetime
    yield ctx.create_timer(timedelta(seconds=seconds))
    return (ctx.current_utc_datetime - start).total_seconds()


def waiter(ctx: task.OrchestrationContext, _):
    ctx.set_custom_status("waiting")
    return (yield ctx.wait_for_external_event("Go"))


def late_waiter(ctx: task.OrchestrationContext, _):
    """Waits only after a timer: an event raised at once arrives before the wait."""
    yield ctx.create_timer(timedelta(seconds=1))
    return (yield ctx.wait_for_external_event("Go"))


def approval(ctx: task.OrchestrationContext, seconds: float):
    event = ctx.wait_for_external_event("Approve")
    timeout = ctx.create_timer(timedelta(seconds=seconds))
    winner = yield task.when_any([event, timeout])
    if winner == event:
        return f"approved: {event.get_result()}"
    return "timed out"


def adder(ctx: task.OrchestrationContext, total: int):
    """Adds one `Add` event per execution, continuing as new (keeping unread events)."""
    total += (yield ctx.wait_for_external_event("Add"))
    if total >= 10:
        return total
    ctx.continue_as_new(total, save_events=True)


def collector(ctx: task.OrchestrationContext, seen: list):
    """Takes one `Item` event per execution, carrying the unread ones into the next."""
    seen = seen + [(yield ctx.wait_for_external_event("Item"))]
    if len(seen) >= 20:
        return seen
    ctx.continue_as_new(seen, save_events=True)


def retrying(ctx: task.OrchestrationContext, _):
    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=200),
                              max_number_of_attempts=3)
    return (yield ctx.call_activity(flaky, input=ctx.instance_id, retry_policy=policy))


def flaky_child(ctx: task.OrchestrationContext, key: str):
    """Fails its first execution (its activity fails, without a retry), succeeds the next."""
    return (yield ctx.call_activity(fails_once, input=key))


def retrying_parent(ctx: task.OrchestrationContext, _):
    """Retries a failing sub-orchestration: the SDK schedules the retry under the first
    attempt's task ID, with the same child instance ID."""
    policy = task.RetryPolicy(first_retry_interval=timedelta(milliseconds=200),
                              max_number_of_attempts=3)
    child = yield ctx.call_sub_orchestrator(flaky_child, input=ctx.instance_id,
                                            instance_id=f"{ctx.instance_id}:child",
                                            retry_policy=policy)
    return {"child": child}


def failing(ctx: task.OrchestrationContext, _):
    yield ctx.call_activity(boom)


def statuses(ctx: task.OrchestrationContext, _):
    ctx.set_custom_status({"step": 1})
    yield ctx.create_timer(timedelta(milliseconds=100))
    ctx.set_custom_status({"step": 2})
    return "done"


def versioned(ctx: task.OrchestrationContext, _):
    return ctx.version


def tagged(ctx: task.OrchestrationContext, _):
    return (yield ctx.call_activity(hello, input="Oslo", tags={"team": "ops", "tier": "gold"}))


w = worker.TaskHubGrpcWorker(host_address=ADDR)
for fn in [sequence, fan_out, parent, tree, sleeper, waiter, late_waiter, approval, adder, collector,
           retrying, flaky_child, retrying_parent, failing, statuses, versioned, tagged]:
    w.add_orchestrator(fn)
for fn in [hello, double, boom, flaky, fails_once]:
    w.add_activity(fn)
w.start()
c = TaskHubGrpcClient(host_address=ADDR)


def finish(iid, timeout=60):
    st = c.wait_for_orchestration_completion(iid, timeout=timeout)
    assert st is not None, iid
    return st


def completed(iid, timeout=60):
    st = finish(iid, timeout)
    assert st.runtime_status == OrchestrationStatus.COMPLETED, (iid, st.runtime_status,
                                                                 st.failure_details)
    return st


HELLO = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"]


def waiting(iid):
    until(lambda: (s := c.get_orchestration_state(iid)) is not None
          and s.get_custom_status() == "waiting", f"{iid} waits")


def t_sequence():
    assert completed("seq").get_output() == HELLO


def t_fan_out():
    assert completed("fan").get_output() == 2 * sum(range(50))


def t_sub():
    assert completed("par").get_output() == {"child": HELLO}
    assert completed("par:child").runtime_status == OrchestrationStatus.COMPLETED


def t_timer():
    assert completed("sleep").get_output() >= 1.0


def t_event_before():
    assert completed("early-event").get_output() == "early"


def t_event_after():
    c.schedule_new_orchestration(waiter, instance_id="late-event")
    waiting("late-event")
    c.raise_orchestration_event("late-event", "Go", data={"n": 1})
    assert completed("late-event").get_output() == {"n": 1}


def t_when_any():
    c.raise_orchestration_event("approve-yes", "Approve", data="ok")
    assert completed("approve-yes").get_output() == "approved: ok"
    assert completed("approve-no").get_output() == "timed out"


def t_continue_as_new():
    c.schedule_new_orchestration(adder, input=0, instance_id="adder")
    for v in [1, 2, 3, 4]:
        c.raise_orchestration_event("adder", "Add", data=v)
    assert completed("adder").get_output() == 10


def t_carried_order():
    # Events raised in order are seen in order across generations (issue 40: on Azure the
    # carried events used to come behind events raised later).
    c.schedule_new_orchestration(collector, input=[], instance_id="collector")
    for v in range(1, 21):
        c.raise_orchestration_event("collector", "Item", data=v)
    assert completed("collector").get_output() == list(range(1, 21)), \
        completed("collector").get_output()


def t_retry():
    # The SDK schedules each retry under the first attempt's task ID (after a timer): the
    # runtime takes it as the next attempt.
    st = finish("retry")
    assert st.runtime_status == OrchestrationStatus.COMPLETED, (st.runtime_status,
                                                                st.failure_details)
    assert st.get_output() == 3, st.get_output()


def t_sub_retry():
    # The retry reuses the failed child's task ID and instance ID: the runtime takes it as
    # the child's next attempt (a new execution of the same instance), not as a copy.
    st = finish("sub-retry")
    assert st.runtime_status == OrchestrationStatus.COMPLETED, (st.runtime_status,
                                                                st.failure_details)
    assert st.get_output() == {"child": "ok: sub-retry"}, st.get_output()
    assert completed("sub-retry:child").get_output() == "ok: sub-retry"


def t_failure():
    st = finish("fail")
    assert st.runtime_status == OrchestrationStatus.FAILED, st.runtime_status
    assert "Kah-BOOOOM!!!" in st.failure_details.message, st.failure_details
    assert st.failure_details.error_type.endswith("TaskFailedError"), st.failure_details
    assert "ValueError: Kah-BOOOOM!!!" in st.failure_details.stack_trace, st.failure_details


def t_status():
    st = completed("status")
    assert st.get_custom_status() == {"step": 2}, st.serialized_custom_status


def t_version_tags():
    st = completed("ver")
    assert st.get_output() == "2.0", st.serialized_output
    if getattr(st, "tags", None) is not None:
        assert st.tags.get("team") == "blue", st.tags


def t_task_tags():
    completed("tagged")
    scheduled = [e for e in c.get_orchestration_history("tagged")
                 if isinstance(e, history.TaskScheduledEvent)]
    assert len(scheduled) == 1, scheduled
    assert scheduled[0].tags == {"team": "ops", "tier": "gold"}, scheduled[0].tags


def t_suspend_resume():
    c.schedule_new_orchestration(waiter, instance_id="susp")
    waiting("susp")
    c.suspend_orchestration("susp", reason="maintenance")
    until(lambda: c.get_orchestration_state("susp").runtime_status
          == OrchestrationStatus.SUSPENDED, "SUSPENDED")
    c.raise_orchestration_event("susp", "Go", data=7)
    time.sleep(0.5)
    assert c.get_orchestration_state("susp").runtime_status == OrchestrationStatus.SUSPENDED
    c.resume_orchestration("susp")
    assert completed("susp").get_output() == 7


def t_terminate():
    c.schedule_new_orchestration(tree, instance_id="term")
    waiting("term:child")
    c.terminate_orchestration("term", output="stop")
    st = finish("term")
    assert st.runtime_status == OrchestrationStatus.TERMINATED and st.get_output() == "stop", st
    assert finish("term:child").runtime_status == OrchestrationStatus.TERMINATED


def t_terminate_with_an_object():
    """Issue 34: an object output read back JSON-encoded twice."""
    c.schedule_new_orchestration(waiter, instance_id="term-object")
    waiting("term-object")
    c.terminate_orchestration("term-object", output={"a": 1})
    st = finish("term-object")
    assert st.runtime_status == OrchestrationStatus.TERMINATED, st
    assert st.get_output() == {"a": 1}, st.serialized_output


def t_restart_running_with_a_new_id():
    """Issue 34: the new instance starts, the old one runs on; under the same ID, refused."""
    c.schedule_new_orchestration(waiter, instance_id="restart-live")
    waiting("restart-live")
    fresh = c.restart_orchestration("restart-live", restart_with_new_instance_id=True)
    assert fresh != "restart-live", fresh
    waiting(fresh)
    assert c.get_orchestration_state("restart-live").runtime_status == OrchestrationStatus.RUNNING
    c.raise_orchestration_event(fresh, "Go", data="new")
    c.raise_orchestration_event("restart-live", "Go", data="old")
    assert completed(fresh).get_output() == "new"
    assert completed("restart-live").get_output() == "old"
    c.schedule_new_orchestration(waiter, instance_id="restart-same")
    waiting("restart-same")
    refused = None
    try:
        c.restart_orchestration("restart-same")
    except Exception as e:  # noqa: BLE001 - the SDK raises grpc's error as it is
        refused = e
    assert refused is not None, "a running instance was restarted under its own ID"
    assert "FAILED_PRECONDITION" in repr(refused), repr(refused)
    c.terminate_orchestration("restart-same", output="done")


def t_query():
    for i in range(5):
        c.schedule_new_orchestration(sequence, instance_id=f"q-{i}")
    for i in range(5):
        completed(f"q-{i}")
    states = c.get_all_orchestration_states(OrchestrationQuery(
        instance_id_prefix="q-", max_instance_count=2, fetch_inputs_and_outputs=True))
    assert sorted(s.instance_id for s in states) == [f"q-{i}" for i in range(5)], states
    assert all(s.get_output() == HELLO for s in states)


def t_restart():
    assert c.restart_orchestration("seq") == "seq"
    assert completed("seq").get_output() == HELLO


def t_purge():
    r = c.purge_orchestration("par")
    assert r.deleted_instance_count == 2, r
    assert c.get_orchestration_state("par") is None
    r = c.purge_orchestrations_by(runtime_status=[OrchestrationStatus.FAILED])
    assert r.deleted_instance_count >= 1, r
    assert c.get_orchestration_state("fail") is None


try:
    # Start everything that takes time first, so the scenarios overlap.
    c.schedule_new_orchestration(sequence, instance_id="seq")
    c.schedule_new_orchestration(fan_out, input=50, instance_id="fan")
    c.schedule_new_orchestration(parent, instance_id="par")
    c.schedule_new_orchestration(sleeper, input=1.0, instance_id="sleep")
    c.schedule_new_orchestration(late_waiter, instance_id="early-event")
    c.raise_orchestration_event("early-event", "Go", data="early")
    c.schedule_new_orchestration(approval, input=30.0, instance_id="approve-yes")
    c.schedule_new_orchestration(approval, input=1.0, instance_id="approve-no")
    c.schedule_new_orchestration(retrying, instance_id="retry")
    c.schedule_new_orchestration(retrying_parent, instance_id="sub-retry")
    c.schedule_new_orchestration(failing, instance_id="fail")
    c.schedule_new_orchestration(statuses, instance_id="status")
    c.schedule_new_orchestration(versioned, instance_id="ver", version="2.0",
                                 tags={"team": "blue"})
    c.schedule_new_orchestration(tagged, instance_id="tagged")
    scenario("activity sequence", t_sequence)
    scenario("fan-out/fan-in (50 activities)", t_fan_out)
    scenario("sub-orchestration", t_sub)
    scenario("durable timer", t_timer)
    scenario("external event raised before the wait", t_event_before)
    scenario("external event raised after the wait", t_event_after)
    scenario("when_any with a timer (event first, timer first)", t_when_any)
    scenario("continue-as-new keeping unread events", t_continue_as_new)
    scenario("events carried across continue-as-new keep their order", t_carried_order)
    scenario("activity retries with a policy (two failures, then success)", t_retry)
    scenario("sub-orchestration retries with a policy (fails once, then succeeds)",
             t_sub_retry)
    scenario("failure with its details", t_failure)
    scenario("custom status", t_status)
    scenario("version and tags", t_version_tags)
    scenario("an activity's tags (call_activity tags=) are kept in its taskScheduled", t_task_tags)
    scenario("suspend and resume", t_suspend_resume)
    scenario("terminate (recursive)", t_terminate)
    scenario("terminate with an object output reads back as the object", t_terminate_with_an_object)
    scenario("restart with a new ID while running", t_restart_running_with_a_new_id)
    scenario("query with paging", t_query)
    scenario("restart", t_restart)
    scenario("purge", t_purge)
finally:
    w.stop()
    c.close()

report("worker")
