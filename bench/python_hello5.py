"""`hello5` with the official Durable Task Python SDK as the worker, against `taskhub worker
--grpc`: N orchestrations of five sequential activities, started at once; prints the
orchestrations/s and the CPU seconds of this Python process (the SDK worker and client) and of
the Taskhub process over the same span.

    cargo build --release -p taskhub-cli
    rm -f /tmp/h5.db*   # a fresh hub: the IDs h5-N of an earlier run are refused ALREADY_EXISTS
    ./target/release/taskhub --db /tmp/h5.db worker --grpc 127.0.0.1:4001 &
    scripts/with-python-sdk.sh sh -c '$TASKHUB_PYTHON_SDK bench/python_hello5.py 127.0.0.1:4001 $(pgrep -f "taskhub --db /tmp/h5.db") 500'
"""

import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from durabletask import worker
from durabletask.client import OrchestrationStatus, TaskHubGrpcClient

ADDR, PID, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
TICK = os.sysconf("SC_CLK_TCK")


def taskhub_cpu() -> float:
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def noop(ctx, x):
    return x


def hello5(ctx, _):
    total = 0
    for i in range(5):
        total += yield ctx.call_activity(noop, input=i)
    return total


w = worker.TaskHubGrpcWorker(host_address=ADDR)
w.add_orchestrator(hello5)
w.add_activity(noop)
w.start()
c = TaskHubGrpcClient(host_address=ADDR)
# Warm up (connections, first turns).
c.wait_for_orchestration_completion(c.schedule_new_orchestration(hello5), timeout=60)

t0, cpu0, th0 = time.monotonic(), own_cpu(), taskhub_cpu()
with ThreadPoolExecutor(16) as pool:
    ids = list(pool.map(lambda i: c.schedule_new_orchestration(hello5, instance_id=f"h5-{i}"),
                        range(N)))
for iid in ids:
    st = c.wait_for_orchestration_completion(iid, timeout=600)
    assert st.runtime_status == OrchestrationStatus.COMPLETED and st.get_output() == 10, st
took = time.monotonic() - t0
py_cpu, th_cpu = own_cpu() - cpu0, taskhub_cpu() - th0
w.stop()
print(f"python hello5: {N} orchestrations in {took:.2f} s = {N / took:.1f} orchestrations/s; "
      f"CPU: Python SDK process {py_cpu:.2f} s, Taskhub process {th_cpu:.2f} s "
      f"({th_cpu / py_cpu:.2f} of Python's)")
