// The official Durable Task JavaScript SDK (@microsoft/durabletask-js, pinned in
// scripts/with-js-sdk.sh) as a WORKER against Taskhub's gRPC endpoint.
//
// Run by tests/js_sdk_worker.rs as `node worker_scenarios.js HOST:PORT` (NODE_PATH: the SDK's
// node_modules), against a Taskhub worker whose registry is empty: every orchestration and
// activity below runs in this process. Every check is an assertion; any failure exits non-zero.
//
// Not covered because the JS SDK 0.4.0 does not offer it: a reason on suspend/resume
// (suspendOrchestration/resumeOrchestration take only the instance ID), and the ID reuse policy
// on start (StartOrchestrationOptions has instanceId, startAt, tags, version only). Rewinds
// that run: tests/js/rewind_scenarios.js; here the refusal of one that did not fail.
"use strict";

const assert = require("node:assert/strict");
const {
  TaskHubGrpcClient,
  TaskHubGrpcWorker,
  HistoryEventType,
  OrchestrationStatus,
  PurgeInstanceCriteria,
  RetryPolicy,
  terminateOptions,
  whenAll,
  whenAny,
} = require("@microsoft/durabletask-js");
const { scenario, report, run } = require("./checks");

const ADDR = process.argv[2];

// Activities.
const hello = async (_ctx, city) => `Hello ${city}!`;
const double = async (_ctx, x) => 2 * x;
const boom = async () => {
  throw new Error("Kah-BOOOOM!!!");
};

// Fails twice per key, then answers the attempt number.
const ATTEMPTS = new Map();
const flaky = async (_ctx, key) => {
  const n = (ATTEMPTS.get(key) || 0) + 1;
  ATTEMPTS.set(key, n);
  if (n < 3) throw new Error(`attempt ${n} fails`);
  return n;
};
// Fails the first call per key, then answers.
const FAILED_ONCE = new Set();
const failsOnce = async (_ctx, key) => {
  if (!FAILED_ONCE.has(key)) {
    FAILED_ONCE.add(key);
    throw new Error(`first call for ${key} fails`);
  }
  return `ok: ${key}`;
};

// Orchestrations.
const sequence = async function* (ctx) {
  const out = [];
  for (const city of ["Tokyo", "Seattle", "London"]) {
    out.push(yield ctx.callActivity(hello, city));
  }
  return out;
};

const fanOut = async function* (ctx, n) {
  const tasks = [];
  for (let i = 0; i < n; i++) tasks.push(ctx.callActivity(double, i));
  const results = yield whenAll(tasks);
  return results.reduce((a, b) => a + b, 0);
};

const parent = async function* (ctx) {
  const child = yield ctx.callSubOrchestrator(sequence, undefined, {
    instanceId: `${ctx.instanceId}:child`,
  });
  return { child };
};

const sleeper = async function* (ctx, seconds) {
  const start = ctx.currentUtcDateTime;
  yield ctx.createTimer(seconds);
  return (ctx.currentUtcDateTime.getTime() - start.getTime()) / 1000;
};

const waiter = async function* (ctx) {
  ctx.setCustomStatus("waiting");
  return yield ctx.waitForExternalEvent("Go");
};

const failing = async function* (ctx) {
  yield ctx.callActivity(boom);
};

const tree = async function* (ctx) {
  return yield ctx.callSubOrchestrator(waiter, undefined, { instanceId: `${ctx.instanceId}:child` });
};

// Waits only after a timer: an event raised at once arrives before the wait.
const lateWaiter = async function* (ctx) {
  yield ctx.createTimer(1);
  return yield ctx.waitForExternalEvent("Go");
};

const approval = async function* (ctx, seconds) {
  const event = ctx.waitForExternalEvent("Approve");
  const timeout = ctx.createTimer(seconds);
  const winner = yield whenAny([event, timeout]);
  if (winner === event) return `approved: ${event.getResult()}`;
  return "timed out";
};

// Adds one `Add` event per execution, continuing as new and keeping the unread events.
const adder = async function* (ctx, total) {
  total += yield ctx.waitForExternalEvent("Add");
  if (total >= 10) return total;
  ctx.continueAsNew(total, true);
};

const POLICY = new RetryPolicy({ maxNumberOfAttempts: 3, firstRetryIntervalInMilliseconds: 200 });

const retrying = async function* (ctx) {
  return yield ctx.callActivity(flaky, ctx.instanceId, { retry: POLICY });
};

// Fails its first execution (its activity fails, without a retry), succeeds the next.
const flakyChild = async function* (ctx, key) {
  return yield ctx.callActivity(failsOnce, key);
};

const retryingParent = async function* (ctx) {
  const child = yield ctx.callSubOrchestrator(flakyChild, ctx.instanceId, {
    instanceId: `${ctx.instanceId}:child`,
    retry: POLICY,
  });
  return { child };
};

const statuses = async function* (ctx) {
  ctx.setCustomStatus({ step: 1 });
  yield ctx.createTimer(0.1);
  ctx.setCustomStatus({ step: 2 });
  return "done";
};

const versioned = async function* (ctx) {
  return ctx.version;
};

// Issue 34: a JSON null is a value on every path (input, activity result, event data, output).
const nothing = async () => null;
const nulls = async function* (ctx, input) {
  const fromActivity = yield ctx.callActivity(nothing);
  const fromEvent = yield ctx.waitForExternalEvent("Go");
  return [input, fromActivity, fromEvent].map((v) => (v === null ? "null" : typeof v));
};
const returnsNull = async function* () {
  return null;
};

// Issue 34: a sub-orchestration knows its parent (ParentInstanceInfo.name).
const childOfNamed = async function* (ctx) {
  const p = ctx.parent;
  return p ? { name: p.name, instanceId: p.instanceId } : null;
};
const namedParent = async function* (ctx) {
  return yield ctx.callSubOrchestrator(childOfNamed, undefined, { instanceId: `${ctx.instanceId}:child` });
};

// Issue 34: an action's tags (TaskOptions.tags): a child started with tags carries them.
const taggedParent = async function* (ctx) {
  const hi = yield ctx.callActivity(hello, "Oslo", { tags: { team: "ops" } });
  const child = yield ctx.callSubOrchestrator(sequence, undefined, {
    instanceId: `${ctx.instanceId}:child`,
    tags: { team: "ops", tier: "gold" },
  });
  return { hi, child };
};

const HELLO = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"];

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR });
  for (const fn of [sequence, fanOut, parent, sleeper, waiter, failing, tree, lateWaiter, approval,
    adder, retrying, flakyChild, retryingParent, statuses, versioned, nulls, returnsNull,
    childOfNamed, namedParent, taggedParent]) {
    worker.addOrchestrator(fn);
  }
  for (const fn of [hello, double, boom, flaky, failsOnce, nothing]) worker.addActivity(fn);
  await worker.start();
  const c = new TaskHubGrpcClient({ hostAddress: ADDR });

  const finish = async (id) => {
    const st = await c.waitForOrchestrationCompletion(id, true, 60);
    assert.ok(st, `${id} exists`);
    return st;
  };
  const output = async (id) => {
    const st = await finish(id);
    assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, `${id}: ${JSON.stringify(st.failureDetails)}`);
    return st.serializedOutput === undefined ? undefined : JSON.parse(st.serializedOutput);
  };
  const until = async (predicate, what) => {
    const deadline = Date.now() + 60000;
    for (;;) {
      if (await predicate()) return;
      assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const waiting = (id) =>
    until(async () => {
      const st = await c.getOrchestrationState(id);
      return st && st.serializedCustomStatus === JSON.stringify("waiting");
    }, `${id} waits`);
  const status = async (id) => (await c.getOrchestrationState(id)).runtimeStatus;

  try {
    await c.scheduleNewOrchestration(sequence, undefined, "js-seq");
    await c.scheduleNewOrchestration(fanOut, 50, "js-fan");
    await c.scheduleNewOrchestration(parent, undefined, "js-par");
    await c.scheduleNewOrchestration(sleeper, 1, "js-sleep");
    await c.scheduleNewOrchestration(failing, undefined, "js-fail");
    await c.scheduleNewOrchestration(lateWaiter, undefined, "js-early-event");
    await c.raiseOrchestrationEvent("js-early-event", "Go", "early");
    await c.scheduleNewOrchestration(approval, 30, "js-approve-yes");
    await c.scheduleNewOrchestration(approval, 1, "js-approve-no");
    await c.scheduleNewOrchestration(retrying, undefined, "js-retry");
    await c.scheduleNewOrchestration(retryingParent, undefined, "js-sub-retry");
    await c.scheduleNewOrchestration(statuses, undefined, "js-status");
    await c.scheduleNewOrchestration(versioned, undefined, {
      instanceId: "js-ver",
      version: "2.0",
      tags: { team: "blue" },
    });

    await scenario("activity sequence", async () => {
      assert.deepEqual(await output("js-seq"), HELLO);
    });
    await scenario("fan-out/fan-in (50 activities)", async () => {
      assert.equal(await output("js-fan"), 2 * ((49 * 50) / 2));
    });
    await scenario("sub-orchestration", async () => {
      assert.deepEqual(await output("js-par"), { child: HELLO });
      assert.deepEqual(await output("js-par:child"), HELLO);
    });
    await scenario("a sub-orchestration's tags are the child's tags", async () => {
      await c.scheduleNewOrchestration(taggedParent, undefined, "js-tagged");
      assert.deepEqual(await output("js-tagged"), { hi: "Hello Oslo!", child: HELLO });
      const st = await c.getOrchestrationState("js-tagged:child");
      assert.deepEqual(st.tags, { team: "ops", tier: "gold" });
    });
    await scenario("durable timer", async () => {
      assert.ok((await output("js-sleep")) >= 1);
    });
    await scenario("external event raised before the wait", async () => {
      assert.equal(await output("js-early-event"), "early");
    });
    await scenario("external event raised after the wait", async () => {
      await c.scheduleNewOrchestration(waiter, undefined, "js-wait");
      await waiting("js-wait");
      await c.raiseOrchestrationEvent("js-wait", "Go", { approved: true });
      assert.deepEqual(await output("js-wait"), { approved: true });
    });
    await scenario("whenAny with a timer (event first, timer first)", async () => {
      await c.raiseOrchestrationEvent("js-approve-yes", "Approve", "ok");
      assert.equal(await output("js-approve-yes"), "approved: ok");
      assert.equal(await output("js-approve-no"), "timed out");
    });
    await scenario("continue-as-new keeping unread events", async () => {
      await c.scheduleNewOrchestration(adder, 0, "js-adder");
      for (const v of [1, 2, 3, 4]) await c.raiseOrchestrationEvent("js-adder", "Add", v);
      assert.equal(await output("js-adder"), 10);
    });
    await scenario("activity retries with a policy (two failures, then success)", async () => {
      assert.equal(await output("js-retry"), 3);
      assert.equal(ATTEMPTS.get("js-retry"), 3);
    });
    await scenario("sub-orchestration retries with a policy (fails once, then succeeds)", async () => {
      assert.deepEqual(await output("js-sub-retry"), { child: "ok: js-sub-retry" });
      assert.equal(await output("js-sub-retry:child"), "ok: js-sub-retry");
      assert.ok(FAILED_ONCE.has("js-sub-retry"), "the child's first attempt never ran");
    });
    await scenario("failure with its details", async () => {
      const st = await finish("js-fail");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      const f = st.failureDetails;
      assert.ok(f.message.includes("Kah-BOOOOM!!!"), f.message);
      assert.ok(f.errorType.length > 0, JSON.stringify(f));
      assert.ok((f.stackTrace || "").length > 0, JSON.stringify(f));
    });
    await scenario("custom status", async () => {
      assert.equal(await output("js-status"), "done");
      const st = await c.getOrchestrationState("js-status");
      assert.deepEqual(JSON.parse(st.serializedCustomStatus), { step: 2 });
    });
    await scenario("version and tags", async () => {
      assert.equal(await output("js-ver"), "2.0");
      const st = await c.getOrchestrationState("js-ver");
      assert.deepEqual(st.tags, { team: "blue" });
    });
    await scenario("suspend and resume", async () => {
      await c.scheduleNewOrchestration(waiter, undefined, "js-susp");
      await waiting("js-susp");
      await c.suspendOrchestration("js-susp");
      await until(async () => (await status("js-susp")) === OrchestrationStatus.SUSPENDED, "SUSPENDED");
      await c.raiseOrchestrationEvent("js-susp", "Go", 7);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(await status("js-susp"), OrchestrationStatus.SUSPENDED);
      await c.resumeOrchestration("js-susp");
      assert.equal(await output("js-susp"), 7);
    });
    await scenario("terminate (recursive)", async () => {
      await c.scheduleNewOrchestration(tree, undefined, "js-term");
      await waiting("js-term:child");
      await c.terminateOrchestration("js-term", terminateOptions({ output: "stop", recursive: true }));
      const st = await finish("js-term");
      assert.equal(st.runtimeStatus, OrchestrationStatus.TERMINATED);
      assert.equal(JSON.parse(st.serializedOutput), "stop");
      assert.equal((await finish("js-term:child")).runtimeStatus, OrchestrationStatus.TERMINATED);
      // Not recursive: the parent ends, its child keeps running and can still finish.
      await c.scheduleNewOrchestration(tree, undefined, "js-term1");
      await waiting("js-term1:child");
      await c.terminateOrchestration("js-term1", terminateOptions({ output: "stop", recursive: false }));
      assert.equal((await finish("js-term1")).runtimeStatus, OrchestrationStatus.TERMINATED);
      assert.equal(await status("js-term1:child"), OrchestrationStatus.RUNNING);
      await c.raiseOrchestrationEvent("js-term1:child", "Go", "alone");
      assert.equal(await output("js-term1:child"), "alone");
      assert.equal((await finish("js-term1")).runtimeStatus, OrchestrationStatus.TERMINATED);
    });
    await scenario("a JSON null input, activity result, event and output stay null", async () => {
      await c.scheduleNewOrchestration(nulls, null, "js-nulls");
      await until(async () => (await status("js-nulls")) === OrchestrationStatus.RUNNING, "RUNNING");
      await c.raiseOrchestrationEvent("js-nulls", "Go", null);
      assert.deepEqual(await output("js-nulls"), ["null", "null", "null"]);
      const st = await c.getOrchestrationState("js-nulls", true);
      assert.equal(st.serializedInput, "null");
      await c.scheduleNewOrchestration(returnsNull, undefined, "js-returns-null");
      const done = await finish("js-returns-null");
      assert.equal(done.runtimeStatus, OrchestrationStatus.COMPLETED);
      assert.equal(done.serializedOutput, "null");
    });
    await scenario("terminate with an object output reads back as the object", async () => {
      await c.scheduleNewOrchestration(waiter, undefined, "js-term-object");
      await waiting("js-term-object");
      await c.terminateOrchestration("js-term-object", terminateOptions({ output: { a: 1 } }));
      const st = await finish("js-term-object");
      assert.equal(st.runtimeStatus, OrchestrationStatus.TERMINATED);
      assert.deepEqual(JSON.parse(st.serializedOutput), { a: 1 });
    });
    await scenario("a sub-orchestration sees its parent's name", async () => {
      await c.scheduleNewOrchestration(namedParent, undefined, "js-named");
      assert.deepEqual(await output("js-named"), { name: "namedParent", instanceId: "js-named" });
    });
    await scenario("restart with a new ID while running", async () => {
      await c.scheduleNewOrchestration(waiter, undefined, "js-restart-live");
      await waiting("js-restart-live");
      const fresh = await c.restartOrchestration("js-restart-live", true);
      assert.notEqual(fresh, "js-restart-live");
      await waiting(fresh);
      assert.equal(await status("js-restart-live"), OrchestrationStatus.RUNNING);
      await c.raiseOrchestrationEvent(fresh, "Go", "new");
      await c.raiseOrchestrationEvent("js-restart-live", "Go", "old");
      assert.equal(await output(fresh), "new");
      assert.equal(await output("js-restart-live"), "old");
      // Under the same ID a running instance is still refused.
      await c.scheduleNewOrchestration(waiter, undefined, "js-restart-same");
      await waiting("js-restart-same");
      await assert.rejects(c.restartOrchestration("js-restart-same", false), /cannot be restarted/);
      await c.terminateOrchestration("js-restart-same", terminateOptions({ output: "done" }));
    });
    await scenario("query with paging", async () => {
      for (let i = 0; i < 5; i++) await c.scheduleNewOrchestration(sequence, undefined, `js-q-${i}`);
      for (let i = 0; i < 5; i++) assert.deepEqual(await output(`js-q-${i}`), HELLO);
      const query = { instanceIdPrefix: "js-q-", pageSize: 2, fetchInputsAndOutputs: true };
      const pages = [];
      for await (const page of c.getAllInstances(query).asPages()) pages.push(page.values);
      assert.ok(pages.length >= 3, `pages of 2: ${pages.map((p) => p.length)}`);
      assert.ok(pages.every((p) => p.length <= 2), `pages of 2: ${pages.map((p) => p.length)}`);
      const all = pages.flat();
      assert.deepEqual(all.map((s) => s.instanceId).sort(), [0, 1, 2, 3, 4].map((i) => `js-q-${i}`));
      assert.ok(all.every((s) => JSON.parse(s.serializedOutput).length === 3));
    });
    await scenario("list instance IDs with paging", async () => {
      const ids = [];
      let pages = 0;
      let key;
      for (;;) {
        const page = await c.listInstanceIds({
          runtimeStatus: [OrchestrationStatus.COMPLETED],
          pageSize: 2,
          lastInstanceKey: key,
        });
        pages += 1;
        assert.ok(page.values.length <= 2, `a page of ${page.values.length}`);
        ids.push(...page.values);
        if (!page.hasMoreResults) break;
        key = page.continuationToken;
        assert.ok(pages < 100, "paging never ends");
      }
      assert.ok(pages >= 3, `${pages} pages`);
      assert.equal(new Set(ids).size, ids.length, `an ID twice: ${ids}`);
      for (let i = 0; i < 5; i++) assert.ok(ids.includes(`js-q-${i}`), `js-q-${i} in ${ids}`);
      assert.ok(!ids.includes("js-fail"), "a FAILED instance listed as COMPLETED");
    });
    await scenario("scheduled start time", async () => {
      const startAt = new Date(Date.now() + 1500);
      await c.scheduleNewOrchestration(sequence, undefined, { instanceId: "js-later", startAt });
      const early = await c.getOrchestrationState("js-later");
      assert.equal(early.runtimeStatus, OrchestrationStatus.PENDING);
      assert.deepEqual(await output("js-later"), HELLO);
      const history = await c.getOrchestrationHistory("js-later");
      const firstTurn = history.find((e) => e.type === HistoryEventType.OrchestratorStarted);
      assert.ok(firstTurn.timestamp.getTime() >= startAt.getTime() - 50, `${firstTurn.timestamp} < ${startAt}`);
    });
    await scenario("history of an instance", async () => {
      const history = await c.getOrchestrationHistory("js-seq");
      const types = history.map((e) => e.type);
      const count = (t) => types.filter((x) => x === t).length;
      assert.equal(count(HistoryEventType.TaskScheduled), 3, JSON.stringify(types));
      assert.equal(count(HistoryEventType.TaskCompleted), 3, JSON.stringify(types));
      assert.equal(count(HistoryEventType.ExecutionCompleted), 1, JSON.stringify(types));
    });
    await scenario("restart", async () => {
      assert.equal(await c.restartOrchestration("js-seq"), "js-seq");
      assert.deepEqual(await output("js-seq"), HELLO);
    });
    await scenario("rewind of an instance that did not fail is refused naming its status", async () => {
      await assert.rejects(c.rewindInstance("js-seq", "try again"), (e) => {
        assert.equal(e.cause && e.cause.code, 9, `FAILED_PRECONDITION expected: ${e.cause && e.cause.code} ${e.message}`);
        assert.match(e.message, /Completed/);
        return true;
      });
    });
    await scenario("purge (one, recursive; and by status)", async () => {
      const one = await c.purgeOrchestration("js-par", { recursive: true });
      assert.equal(one.deletedInstanceCount, 2);
      assert.equal(await c.getOrchestrationState("js-par"), undefined);
      assert.equal(await c.getOrchestrationState("js-par:child"), undefined);
      const criteria = new PurgeInstanceCriteria();
      criteria.setRuntimeStatusList([OrchestrationStatus.FAILED]);
      const some = await c.purgeOrchestration(criteria);
      assert.ok(some.deletedInstanceCount >= 1, JSON.stringify(some));
      assert.equal(await c.getOrchestrationState("js-fail"), undefined);
    });
  } finally {
    await worker.stop();
    await c.stop();
  }
  report("worker");
}

run(main);
