"""One Durable Task Python SDK worker process, for the SIGKILL test of tests/python_sdk_worker.rs:
`python worker_process.py HOST:PORT NAME` runs until killed. Its orchestration `two_steps`
runs a quick activity, then a slow one (4 s; it prints "slow step started by NAME" first);
each activity answers which worker ran it.
"""

import sys
import threading
import time

from durabletask import task, worker

ADDR, NAME = sys.argv[1], sys.argv[2]


def step(ctx: task.ActivityContext, what: str) -> str:
    return f"{what} by {NAME}"


def slow_step(ctx: task.ActivityContext, what: str) -> str:
    print(f"slow step started by {NAME}", flush=True)
    time.sleep(4)
    return f"{what} by {NAME}"


def two_steps(ctx: task.OrchestrationContext, _):
    first = yield ctx.call_activity(step, input="step 1")
    second = yield ctx.call_activity(slow_step, input="slow step")
    return [first, second]


w = worker.TaskHubGrpcWorker(host_address=ADDR)
w.add_orchestrator(two_steps)
w.add_activity(step)
w.add_activity(slow_step)
w.start()
print(f"worker {NAME} started", flush=True)
threading.Event().wait()
