"""The Python SDK's large-payload option against Taskhub's gRPC endpoint (issue 34).

Run by tests/python_sdk_worker.rs (under scripts/with-python-sdk.sh) as
`python large_payloads.py HOST:PORT`. A worker and a client in this process share one
PayloadStore (in memory, the token format of the SDK's Azure Blob store: `blob:v1:<container>:
<blob>`), with a threshold of 64 bytes: every larger payload goes over the wire, and into
Taskhub's history and instance rows, as a token that is not JSON. Taskhub must pass each token
through unchanged (start input, activity input and result, event data, custom status, output),
so the SDK turns it back into the payload on the other side. The Rust test then reads the
instances over gRPC and checks that Taskhub holds the tokens as they were sent.
"""

import sys
import threading

from checks import report, scenario
from durabletask import task, worker
from durabletask.client import OrchestrationStatus, TaskHubGrpcClient
from durabletask.payload import LargePayloadStorageOptions, PayloadStore

ADDR = sys.argv[1]
PREFIX = "blob:v1:taskhub-test:"


class MemoryPayloadStore(PayloadStore):
    """Payloads kept in this process, behind tokens shaped as the Azure Blob store's."""

    def __init__(self):
        self._options = LargePayloadStorageOptions(threshold_bytes=64, enable_compression=False)
        self._blobs = {}
        self._lock = threading.Lock()
        self.uploads = 0
        self.downloads = 0

    @property
    def options(self):
        return self._options

    def upload(self, data, *, instance_id=None):
        with self._lock:
            self.uploads += 1
            token = f"{PREFIX}{instance_id or 'none'}/{self.uploads}"
            self._blobs[token] = bytes(data)
            return token

    async def upload_async(self, data, *, instance_id=None):
        return self.upload(data, instance_id=instance_id)

    def download(self, token):
        with self._lock:
            self.downloads += 1
            return self._blobs[token]

    async def download_async(self, token):
        return self.download(token)

    def is_known_token(self, value):
        return value.startswith(PREFIX)


BIG = "x" * 500


def shout(ctx: task.ActivityContext, text: str) -> str:
    return text.upper()


def big_flow(ctx: task.OrchestrationContext, text: str):
    ctx.set_custom_status({"status": text})
    loud = yield ctx.call_activity(shout, input=text)
    extra = yield ctx.wait_for_external_event("More")
    return {"loud": loud, "extra": extra, "len": len(text)}


store = MemoryPayloadStore()
w = worker.TaskHubGrpcWorker(host_address=ADDR, payload_store=store)
w.add_orchestrator(big_flow)
w.add_activity(shout)
w.start()
c = TaskHubGrpcClient(host_address=ADDR, payload_store=store)


def t_round_trip():
    c.schedule_new_orchestration(big_flow, input=BIG, instance_id="big")
    c.raise_orchestration_event("big", "More", data="y" * 300)
    st = c.wait_for_orchestration_completion("big", timeout=60)
    assert st is not None
    assert st.runtime_status == OrchestrationStatus.COMPLETED, st.failure_details
    out = st.get_output()
    assert out == {"loud": BIG.upper(), "extra": "y" * 300, "len": 500}, out
    assert st.serialized_input is not None and "x" * 500 in st.serialized_input
    # Every large payload went out as a token and came back through one.
    assert store.uploads >= 5, store.uploads
    assert store.downloads >= 5, store.downloads


def t_small_payloads_stay_inline():
    before = store.uploads
    c.schedule_new_orchestration(big_flow, input="small", instance_id="small")
    c.raise_orchestration_event("small", "More", data=None)
    st = c.wait_for_orchestration_completion("small", timeout=60)
    assert st is not None
    assert st.runtime_status == OrchestrationStatus.COMPLETED, st.failure_details
    assert st.get_output() == {"loud": "SMALL", "extra": None, "len": 5}, st.get_output()
    assert store.uploads == before, "a small payload was externalized"


try:
    scenario("large payloads pass through Taskhub as tokens", t_round_trip)
    scenario("small payloads and a null event stay inline", t_small_payloads_stay_inline)
finally:
    w.stop()
    c.close()

report("large-payload")
