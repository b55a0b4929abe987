"""One Durable Task Python SDK worker process, for the SIGKILL test of
tests/python_sdk_entities.rs: `python entity_worker_process.py HOST:PORT NAME` runs until
killed. Its entity `marks` records which workers ran its `mark` operations; a `mark` whose
input is "slow" takes 4 s (it prints "slow mark started by NAME" first).
"""

import sys
import threading
import time

from durabletask import entities, worker

ADDR, NAME = sys.argv[1], sys.argv[2]


def marks(ctx: entities.EntityContext, how):
    seen = ctx.get_state(list, [])
    if how == "slow":
        print(f"slow mark started by {NAME}", flush=True)
        time.sleep(4)
    ctx.set_state(seen + [NAME])
    return NAME


w = worker.TaskHubGrpcWorker(host_address=ADDR)
w.add_entity(marks)
w.start()
print(f"worker {NAME} started", flush=True)
threading.Event().wait()
