"""One Durable Task Python SDK worker process with the SDK's own work-item filters
(`use_work_item_filters()`: built from what it registered), for the mixed-language hub of
tests/sdk_mixed_filters.rs: `python filtered_worker.py HOST:PORT ROLE` runs until killed and
prints "worker ROLE started" once started.

* ROLE `main`: orchestrations `PyGreet` (its activity `PyWhere`) and `PyCross` (`PyWhere`, then
  the Rust activity `RustWhere` run by Taskhub's own registry, then the JavaScript worker's
  `JsWhere`), and the activity `PyWhere`, which answers "python: INPUT".
* ROLE `late`: only the orchestration `PyLater` (which calls `PyWhere`, run by the `main`
  worker), started before any worker takes it.
* ROLE `v1` or `v2`: only the orchestration `PyVersioned` and its activity `PyVersionedAct`
  (it answers ["python vN", its version, "activity vN"]), with the SDK's strict versioning at version N and the failure
  strategy FAIL: an orchestration of another version that reached it would be failed, so its
  filters must keep it away.
"""

import sys
import threading

from durabletask import task, worker

ADDR, ROLE = sys.argv[1], sys.argv[2]


def PyWhere(ctx: task.ActivityContext, what: str) -> str:  # noqa: N802 (the registered name)
    return f"python: {what}"


def PyGreet(ctx: task.OrchestrationContext, what: str):  # noqa: N802
    where = yield ctx.call_activity(PyWhere, input=what)
    return ["python orchestration", where]


def PyCross(ctx: task.OrchestrationContext, what: str):  # noqa: N802
    py = yield ctx.call_activity(PyWhere, input=what)
    rust = yield ctx.call_activity("RustWhere", input=what)
    js = yield ctx.call_activity("JsWhere", input=what)
    return ["python orchestration", py, rust, js]


def PyVersionedAct(ctx: task.ActivityContext, _) -> str:  # noqa: N802
    return f"activity {ROLE}"


def PyVersioned(ctx: task.OrchestrationContext, _):  # noqa: N802
    # The SDK puts the worker's version on its activity filters but schedules the activity
    # without one: Taskhub lets it match (dispatch/filters.rs).
    act = yield ctx.call_activity(PyVersionedAct)
    return [f"python {ROLE}", ctx.version, act]


def PyLater(ctx: task.OrchestrationContext, what: str):  # noqa: N802
    where = yield ctx.call_activity("PyWhere", input=what)
    return ["python late orchestration", where]


w = worker.TaskHubGrpcWorker(host_address=ADDR)
if ROLE == "main":
    w.add_orchestrator(PyGreet)
    w.add_orchestrator(PyCross)
    w.add_activity(PyWhere)
elif ROLE == "late":
    w.add_orchestrator(PyLater)
elif ROLE in ("v1", "v2"):
    w.add_orchestrator(PyVersioned)
    w.add_activity(PyVersionedAct)
    w.use_versioning(worker.VersioningOptions(
        version=ROLE[1:],
        match_strategy=worker.VersionMatchStrategy.STRICT,
        failure_strategy=worker.VersionFailureStrategy.FAIL,
    ))
else:
    sys.exit(f"unknown role {ROLE}")
w.use_work_item_filters()
w.start()
print(f"worker {ROLE} started", flush=True)
threading.Event().wait()
