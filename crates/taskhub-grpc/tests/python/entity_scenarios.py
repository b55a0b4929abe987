"""Durable entities written with the official Durable Task Python SDK, run by Taskhub.

Run by tests/python_sdk_entities.rs (under scripts/with-python-sdk.sh) as
`python entity_scenarios.py HOST:PORT`, against a Taskhub worker whose registry is empty:
every entity operation and orchestration below runs in this process (entity batches are
`entityRequest` work items); Taskhub keeps the entities' state, de-duplication, locks and
queues. Every check is an assert: any failure exits non-zero.
"""

import sys

from checks import report, scenario, until
from durabletask import entities, task, worker
from durabletask.client import OrchestrationStatus, TaskHubGrpcClient
from durabletask.entities import EntityInstanceId

ADDR = sys.argv[1]


# Entities.

def counter(ctx: entities.EntityContext, input):
    """A function-based entity: add, get, fail, reset, and a signal to another counter."""
    value = ctx.get_state(int, 0)
    if ctx.operation == "add":
        ctx.set_state(value + input)
        return value + input
    if ctx.operation == "get":
        return value
    if ctx.operation == "fail":
        ctx.set_state(value + 1000)  # rolled back: the operation fails
        raise ValueError(f"counter refuses: {input}")
    if ctx.operation == "forward":
        ctx.set_state(value + 1)
        ctx.signal_entity(EntityInstanceId("counter", input), "add", 10)
        return None
    raise ValueError(f"no operation {ctx.operation}")


class Account(entities.DurableEntity):
    """A class-based entity: a balance that cannot go below zero."""

    def deposit(self, amount: int) -> int:
        balance = self.get_state(int, 0) + amount
        self.set_state(balance)
        return balance

    def withdraw(self, amount: int) -> int:
        balance = self.get_state(int, 0)
        if amount > balance:
            raise ValueError(f"insufficient funds: {balance} < {amount}")
        self.set_state(balance - amount)
        return balance - amount

    def balance(self) -> int:
        return self.get_state(int, 0)


# Orchestrations.

def call_counter(ctx: task.OrchestrationContext, key: str):
    e = EntityInstanceId("counter", key)
    first = yield ctx.call_entity(e, "add", 5)
    second = yield ctx.call_entity(e, "add", 2)
    now = yield ctx.call_entity(e, "get")
    return [first, second, now]


def call_failing(ctx: task.OrchestrationContext, key: str):
    e = EntityInstanceId("counter", key)
    yield ctx.call_entity(e, "add", 1)
    try:
        yield ctx.call_entity(e, "fail", "on purpose")
        return "no failure"
    except task.TaskFailedError as err:
        after = yield ctx.call_entity(e, "get")
        return {"message": str(err), "after": after}


def signal_counter(ctx: task.OrchestrationContext, key: str):
    e = EntityInstanceId("counter", key)
    ctx.signal_entity(e, "add", 3)
    ctx.signal_entity(e, "add", 4)
    return "sent"


def transfer(ctx: task.OrchestrationContext, args):
    """Moves money between two accounts inside a critical section over both."""
    src = EntityInstanceId("account", args["from"])
    dst = EntityInstanceId("account", args["to"])
    with (yield ctx.lock_entities([src, dst])):
        balance = yield ctx.call_entity(src, "balance")
        if balance < args["amount"]:
            return "refused"
        yield ctx.call_entity(src, "withdraw", args["amount"])
        yield ctx.call_entity(dst, "deposit", args["amount"])
    return "moved"


def hold_lock(ctx: task.OrchestrationContext, key: str):
    """Locks two counters and waits inside the critical section until terminated."""
    es = [EntityInstanceId("counter", f"{key}-1"), EntityInstanceId("counter", f"{key}-2")]
    with (yield ctx.lock_entities(es)):
        ctx.set_custom_status("inside")
        yield ctx.wait_for_external_event("never")
    return "left"


def call_rust(ctx: task.OrchestrationContext, key: str):
    """Calls `rustcounter`, an entity written in Rust and run by Taskhub itself."""
    e = EntityInstanceId("rustcounter", key)
    ctx.signal_entity(e, "add", 1)
    total = yield ctx.call_entity(e, "add", 41)
    try:
        yield ctx.call_entity(e, "nope")
        return "no failure"
    except task.TaskFailedError as err:
        return {"total": total, "error": str(err)}


w = worker.TaskHubGrpcWorker(host_address=ADDR)
w.add_entity(counter)
w.add_entity(Account)
for fn in [call_counter, call_failing, signal_counter, transfer, hold_lock, call_rust]:
    w.add_orchestrator(fn)
w.start()
c = TaskHubGrpcClient(host_address=ADDR)


def state_of(entity, kind=int):
    meta = c.get_entity(entity)
    return None if meta is None else meta.get_state(kind)


def t_signal_and_get():
    e = EntityInstanceId("counter", "signals")
    for n in range(1, 6):
        c.signal_entity(e, "add", n)
    until(lambda: state_of(e) == 15, "counter 'signals' at 15")
    # A failed operation leaves the state as it was.
    c.signal_entity(e, "fail", "x")
    c.signal_entity(e, "add", 1)
    until(lambda: state_of(e) == 16, "counter 'signals' at 16")


def t_class_entity():
    e = EntityInstanceId("account", "solo")
    c.signal_entity(e, "deposit", 40)
    c.signal_entity(e, "withdraw", 100)  # fails: insufficient funds, nothing changes
    c.signal_entity(e, "withdraw", 15)
    until(lambda: state_of(e) == 25, "account 'solo' at 25")


def t_entity_signals_entity():
    c.signal_entity(EntityInstanceId("counter", "from"), "forward", "to")
    until(lambda: state_of(EntityInstanceId("counter", "to")) == 10, "counter 'to' at 10")
    assert state_of(EntityInstanceId("counter", "from")) == 1


def wait_done(instance_id):
    st = c.wait_for_orchestration_completion(instance_id, timeout=60)
    assert st is not None, f"{instance_id}: no state"
    assert st.runtime_status == OrchestrationStatus.COMPLETED, \
        f"{instance_id}: {st.runtime_status} {st.failure_details}"
    return st


def t_call_from_orchestration():
    st = wait_done("call-counter")
    assert st.serialized_output == "[5, 7, 7]", st.serialized_output


def t_call_failure():
    st = wait_done("call-failing")
    import json
    out = json.loads(st.serialized_output)
    assert "counter refuses: on purpose" in out["message"], out
    assert out["after"] == 1, out


def t_signal_from_orchestration():
    wait_done("signal-counter")
    until(lambda: state_of(EntityInstanceId("counter", "signaled")) == 7,
          "counter 'signaled' at 7")


def t_locks():
    # Ten transfers of 10 each way between two accounts at once: without the critical
    # sections' mutual exclusion, a check-then-withdraw would interleave and overdraw.
    a, b = EntityInstanceId("account", "a"), EntityInstanceId("account", "b")
    c.signal_entity(a, "deposit", 50)
    c.signal_entity(b, "deposit", 50)
    until(lambda: state_of(a) == 50 and state_of(b) == 50, "both accounts at 50")
    ids = []
    for i in range(6):
        args = {"from": "a", "to": "b", "amount": 20} if i % 2 == 0 else \
            {"from": "b", "to": "a", "amount": 20}
        ids.append(c.schedule_new_orchestration(transfer, input=args, instance_id=f"transfer-{i}"))
    outcomes = [wait_done(i).serialized_output for i in ids]
    assert all(o in ('"moved"', '"refused"') for o in outcomes), outcomes
    total = state_of(a) + state_of(b)
    assert total == 100, f"money created or lost: {state_of(a)} + {state_of(b)}"
    assert state_of(a) >= 0 and state_of(b) >= 0
    # The locks were released: a plain signal runs.
    c.signal_entity(a, "deposit", 1)
    until(lambda: state_of(a) + state_of(b) == 101, "a signal after the critical sections")


def t_terminate_inside_section():
    # The SDK is not asked when a client terminates its orchestration: Taskhub releases the
    # locks the orchestration held, so the entities run later signals.
    iid = c.schedule_new_orchestration(hold_lock, input="held", instance_id="hold-lock")

    def inside():
        st = c.get_orchestration_state(iid)
        return st is not None and st.serialized_custom_status == '"inside"'
    until(inside, "hold-lock inside its critical section")
    c.terminate_orchestration(iid, output="stop")
    st = c.wait_for_orchestration_completion(iid, timeout=60)
    assert st.runtime_status == OrchestrationStatus.TERMINATED, st.runtime_status
    for n in (1, 2):
        e = EntityInstanceId("counter", f"held-{n}")
        c.signal_entity(e, "add", 5)
        until(lambda: state_of(e) == 5, f"a signal to counter 'held-{n}' after the terminate")


def t_rust_entity():
    import json
    out = json.loads(wait_done("call-rust").serialized_output)
    assert out["total"] == 42, out
    assert "rustcounter has no operation 'nope'" in out["error"], out
    assert state_of(EntityInstanceId("rustcounter", "r")) == 42


try:
    c.schedule_new_orchestration(call_counter, input="called", instance_id="call-counter")
    c.schedule_new_orchestration(call_failing, input="failing", instance_id="call-failing")
    c.schedule_new_orchestration(signal_counter, input="signaled", instance_id="signal-counter")
    c.schedule_new_orchestration(call_rust, input="r", instance_id="call-rust")
    scenario("function entity: signals from a client, get state, failed operation", t_signal_and_get)
    scenario("class entity: signals, a failing method, get state", t_class_entity)
    scenario("an entity signals another entity", t_entity_signals_entity)
    scenario("call an entity from an orchestration (results)", t_call_from_orchestration)
    scenario("call an entity from an orchestration (failure)", t_call_failure)
    scenario("signal an entity from an orchestration", t_signal_from_orchestration)
    scenario("critical section over two entities from orchestrations", t_locks)
    scenario("a Python orchestration calls an entity written in Rust", t_rust_entity)
    scenario("a terminated orchestration's critical section is released", t_terminate_inside_section)
finally:
    w.stop()
    c.close()

report("entity")
