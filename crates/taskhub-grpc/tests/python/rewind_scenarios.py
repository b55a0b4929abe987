"""Rewind with the official Durable Task Python SDK against Taskhub's gRPC endpoint.

Run by tests/sdk_rewind.rs (under scripts/with-python-sdk.sh) as
`python rewind_scenarios.py HOST:PORT`, against a Taskhub worker whose registry is empty.

1. The SDK's own rewind tests, unchanged: sdk_tests/test_rewind_e2e.py, copied from
   microsoft/durabletask-python (commit 6dfdbac521d9d59d31d7ea975fb669d66f86f4c4,
   tests/durabletask/test_rewind_e2e.py; MIT License, Copyright (c) Microsoft Corporation).
   They run against the SDK's in-memory backend there; here against Taskhub: the module's
   backend fixture is given a backend that is Taskhub (`create_test_backend` answers an
   object whose stop/reset do nothing), its port is Taskhub's, and pytest is not needed
   (`pytest.fixture` and `pytest.raises` are the two parts the file uses). Each `test_*`
   function is called in order; every one must pass.
2. Taskhub's own checks: the history shows the rewind with its reason (or none), a rewound
   failed activity runs once more while the successes are not run again (counted), and the
   refusals carry the codes the SDKs act on (NOT_FOUND, FAILED_PRECONDITION naming the
   status, INVALID_ARGUMENT for no ID).
"""

import contextlib
import importlib.util
import json
import os
import sys
import types

import grpc
from checks import report, scenario

ADDR = sys.argv[1]
HOST_NAME, PORT = ADDR.rsplit(":", 1)
HERE = os.path.dirname(os.path.abspath(__file__))

# -- What the SDK's test module imports, pointed at Taskhub ------------------------------

pytest = types.ModuleType("pytest")
pytest.fixture = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))


@contextlib.contextmanager
def _raises(kind):
    try:
        yield
    except kind:
        return
    raise AssertionError(f"did not raise {kind.__name__}")


pytest.raises = _raises
sys.modules["pytest"] = pytest

for name in ["tests", "tests.durabletask"]:
    sys.modules.setdefault(name, types.ModuleType(name))
ports = types.ModuleType("tests.durabletask._port_utils")
ports.find_free_port = lambda: int(PORT)
sys.modules["tests.durabletask._port_utils"] = ports


class _Taskhub:
    """The backend the module's fixture starts: Taskhub, already serving."""

    def stop(self):
        pass

    def reset(self):
        pass


testing = types.ModuleType("durabletask.testing")
testing.create_test_backend = lambda port=None, **_: _Taskhub()
sys.modules["durabletask.testing"] = testing

from durabletask import client, history, task, worker  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "test_rewind_e2e", os.path.join(HERE, "sdk_tests", "test_rewind_e2e.py"))
sdk_tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sdk_tests)
# `localhost` in the module: Taskhub listens on the address given (127.0.0.1).
sdk_tests.HOST = ADDR


sdk_names = [n for n in dir(sdk_tests) if n.startswith("test_")]
sdk_names.sort(key=lambda n: getattr(sdk_tests, n).__code__.co_firstlineno)
assert len(sdk_names) == 8, sdk_names
for name in sdk_names:
    scenario(f"SDK test {name}", getattr(sdk_tests, name))

# -- Taskhub's own checks ----------------------------------------------------------------

RUNS = {"charge": 0, "reserve": 0, "ship": 0}
SHIP_FAILS = [True]


def charge(_: task.ActivityContext, order: str) -> str:
    RUNS["charge"] += 1
    return f"charged {order}"


def reserve(_: task.ActivityContext, order: str) -> str:
    RUNS["reserve"] += 1
    return f"reserved {order}"


def ship(_: task.ActivityContext, order: str) -> str:
    RUNS["ship"] += 1
    if SHIP_FAILS[0]:
        raise RuntimeError("the carrier is down")
    return f"shipped {order}"


def order(ctx: task.OrchestrationContext, order_id: str):
    # Two successes in parallel, then the step that fails.
    done_ = yield task.when_all([
        ctx.call_activity(charge, input=order_id),
        ctx.call_activity(reserve, input=order_id),
    ])
    shipped = yield ctx.call_activity(ship, input=order_id)
    return done_ + [shipped]


def completes(_ctx: task.OrchestrationContext, _):
    return "done"


def rewinds(events):
    return [e for e in events if isinstance(e, history.ExecutionRewoundEvent)]


def code_of(call):
    try:
        call()
    except grpc.RpcError as e:
        return e.code(), e.details()
    raise AssertionError("the call was accepted")


w = worker.TaskHubGrpcWorker(host_address=ADDR)
w.add_orchestrator(order)
w.add_orchestrator(completes)
w.add_activity(charge)
w.add_activity(reserve)
w.add_activity(ship)
w.start()
c = client.TaskHubGrpcClient(host_address=ADDR)


def successes_kept_and_the_failure_run_again():
    id = c.schedule_new_orchestration(order, input="o-1", instance_id="py-rewind-order")
    state = c.wait_for_orchestration_completion(id, timeout=60)
    assert state.runtime_status == client.OrchestrationStatus.FAILED, state
    assert "the carrier is down" in state.failure_details.message, state.failure_details
    assert RUNS == {"charge": 1, "reserve": 1, "ship": 1}, RUNS
    SHIP_FAILS[0] = False
    c.rewind_orchestration(id, reason="the carrier is back")
    # Running at once: a wait right after waits for the rewound run.
    state = c.wait_for_orchestration_completion(id, timeout=60)
    assert state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    assert json.loads(state.serialized_output) == [
        "charged o-1", "reserved o-1", "shipped o-1"], state.serialized_output
    assert state.failure_details is None
    assert RUNS == {"charge": 1, "reserve": 1, "ship": 2}, RUNS
    events = c.get_orchestration_history(id)
    marks = rewinds(events)
    assert len(marks) == 1 and marks[0].reason == "the carrier is back", marks
    # The failure is gone from the history; the activity's two schedules: the one kept
    # (none: it failed) and the one after the rewind.
    assert not [e for e in events if isinstance(e, history.TaskFailedEvent)], events
    scheduled = [e.name for e in events if isinstance(e, history.TaskScheduledEvent)]
    assert sorted(scheduled) == ["charge", "reserve", "ship"], scheduled


def no_reason_is_no_reason():
    SHIP_FAILS[0] = True
    id = c.schedule_new_orchestration(order, input="o-2", instance_id="py-rewind-no-reason")
    state = c.wait_for_orchestration_completion(id, timeout=60)
    assert state.runtime_status == client.OrchestrationStatus.FAILED, state
    SHIP_FAILS[0] = False
    c.rewind_orchestration(id)
    state = c.wait_for_orchestration_completion(id, timeout=60)
    assert state.runtime_status == client.OrchestrationStatus.COMPLETED, state
    marks = rewinds(c.get_orchestration_history(id))
    assert len(marks) == 1 and marks[0].reason is None, marks


def refusals_carry_the_codes():
    code, details = code_of(lambda: c.rewind_orchestration("py-rewind-nobody"))
    assert code == grpc.StatusCode.NOT_FOUND, (code, details)
    id = c.schedule_new_orchestration(completes, instance_id="py-rewind-completed")
    c.wait_for_orchestration_completion(id, timeout=60)
    code, details = code_of(lambda: c.rewind_orchestration(id, reason="why not"))
    assert code == grpc.StatusCode.FAILED_PRECONDITION, (code, details)
    assert "Completed" in details, details
    code, details = code_of(lambda: c.rewind_orchestration(""))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
    assert "instanceId" in details, details


scenario("successes kept, the failed activity run again, the rewind in the history",
         successes_kept_and_the_failure_run_again)
scenario("a rewind without a reason", no_reason_is_no_reason)
scenario("refusals: NOT_FOUND, FAILED_PRECONDITION naming the status, INVALID_ARGUMENT",
         refusals_carry_the_codes)
w.stop()

report("rewind")
