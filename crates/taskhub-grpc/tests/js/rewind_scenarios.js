// Rewind with the official Durable Task JavaScript SDK (@microsoft/durabletask-js, pinned in
// scripts/with-js-sdk.sh) against Taskhub's gRPC endpoint.
//
// Run by tests/sdk_rewind.rs as `node rewind_scenarios.js HOST:PORT` (NODE_PATH: the SDK's
// node_modules), against a Taskhub worker whose registry is empty: every orchestration and
// activity below runs in this process. Every check is an assertion; any failure exits non-zero.
//
// 1. Taskhub's scenarios: a failed activity run again while the successes are not (counted),
//    a failed sub-orchestration rewound with its parent, a purged one started again, rewinding
//    twice, no reason; the history shows each rewind with its reason.
// 2. The SDK's own rewind tests that need a backend: test/e2e-azuremanaged/rewind.spec.ts of
//    microsoft/durabletask-js (MIT License, Copyright (c) Microsoft Corporation), written for
//    jest against the Durable Task Scheduler; the same steps and expectations here with
//    node:assert, against Taskhub (the spec file needs the azure-managed package and a TypeScript
//    jest setup, neither of which the pinned SDK ships).
"use strict";

const assert = require("node:assert/strict");
const {
  TaskHubGrpcClient,
  TaskHubGrpcWorker,
  HistoryEventType,
  OrchestrationStatus,
  whenAll,
} = require("@microsoft/durabletask-js");
const { scenario, report, run } = require("./checks");

const ADDR = process.argv[2];

// How many times each activity ran, and which of them fail for now.
const RUNS = new Map();
const FAILING = new Set();
const ran = (key) => RUNS.set(key, (RUNS.get(key) || 0) + 1);
const runs = (key) => RUNS.get(key) || 0;

// Activities: the key names the scenario.
const charge = async (_ctx, key) => {
  ran(`charge:${key}`);
  return `charged ${key}`;
};
const reserve = async (_ctx, key) => {
  ran(`reserve:${key}`);
  return `reserved ${key}`;
};
const ship = async (_ctx, key) => {
  ran(`ship:${key}`);
  if (FAILING.has(key)) throw new Error(`the carrier is down for ${key}`);
  return `shipped ${key}`;
};

// Orchestrations.
const order = async function* (ctx, key) {
  const first = yield whenAll([ctx.callActivity(charge, key), ctx.callActivity(reserve, key)]);
  const shipped = yield ctx.callActivity(ship, key);
  return [...first, shipped];
};
const delivery = async function* (ctx, key) {
  return yield ctx.callActivity(ship, key);
};
const parent = async function* (ctx, key) {
  const charged = yield ctx.callActivity(charge, key);
  const shipped = yield ctx.callSubOrchestrator(delivery, key, { instanceId: `${ctx.instanceId}:child` });
  return [charged, shipped];
};

// The SDK's rewind.spec.ts: an orchestration that fails its first run (in its own code), and
// one that waits for an event.
const attemptCountByInstance = new Map();
const failOnceOrchestrator = async (ctx, _input) => {
  const instanceId = ctx.instanceId;
  const currentAttempt = (attemptCountByInstance.get(instanceId) ?? 0) + 1;
  attemptCountByInstance.set(instanceId, currentAttempt);
  if (currentAttempt === 1) {
    throw new Error("First attempt failed!");
  }
  return `Success on attempt ${currentAttempt}`;
};
const waitingOrchestrator = async function* (ctx) {
  const approval = yield ctx.waitForExternalEvent("approval");
  return `Approved: ${approval}`;
};

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR });
  for (const o of [order, delivery, parent, failOnceOrchestrator, waitingOrchestrator]) worker.addOrchestrator(o);
  for (const a of [charge, reserve, ship]) worker.addActivity(a);
  await worker.start();
  const c = new TaskHubGrpcClient({ hostAddress: ADDR });
  const finish = (id) => c.waitForOrchestrationCompletion(id, true, 60);
  const rewinds = async (id) =>
    (await c.getOrchestrationHistory(id)).filter((e) => e.type === HistoryEventType.ExecutionRewound);
  try {
    await scenario("a failed activity runs again; the successes are kept, not run again", async () => {
      FAILING.add("o1");
      await c.scheduleNewOrchestration(order, "o1", "js-rw-order");
      let st = await finish("js-rw-order");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      assert.match(st.failureDetails.message, /the carrier is down for o1/);
      FAILING.delete("o1");
      await c.rewindInstance("js-rw-order", "the carrier is back");
      st = await finish("js-rw-order");
      assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, JSON.stringify(st.failureDetails));
      assert.deepEqual(JSON.parse(st.serializedOutput), ["charged o1", "reserved o1", "shipped o1"]);
      assert.equal(st.failureDetails, undefined);
      assert.deepEqual([runs("charge:o1"), runs("reserve:o1"), runs("ship:o1")], [1, 1, 2]);
      const marks = await rewinds("js-rw-order");
      assert.equal(marks.length, 1);
      assert.equal(marks[0].reason, "the carrier is back");
      const history = await c.getOrchestrationHistory("js-rw-order");
      assert.equal(history.filter((e) => e.type === HistoryEventType.TaskFailed).length, 0);
      assert.equal(history.filter((e) => e.type === HistoryEventType.TaskScheduled).length, 3);
    });

    await scenario("a failed sub-orchestration is rewound with its parent", async () => {
      FAILING.add("o2");
      await c.scheduleNewOrchestration(parent, "o2", "js-rw-parent");
      let st = await finish("js-rw-parent");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      assert.equal((await finish("js-rw-parent:child")).runtimeStatus, OrchestrationStatus.FAILED);
      FAILING.delete("o2");
      await c.rewindInstance("js-rw-parent", "child fixed");
      st = await finish("js-rw-parent");
      assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, JSON.stringify(st.failureDetails));
      assert.deepEqual(JSON.parse(st.serializedOutput), ["charged o2", "shipped o2"]);
      const child = await finish("js-rw-parent:child");
      assert.equal(child.runtimeStatus, OrchestrationStatus.COMPLETED);
      assert.deepEqual([runs("charge:o2"), runs("ship:o2")], [1, 2]);
      // The child was rewound too, with the parent's reason.
      const marks = await rewinds("js-rw-parent:child");
      assert.equal(marks.length, 1);
      assert.equal(marks[0].reason, "child fixed");
    });

    await scenario("a purged sub-orchestration is started again from its input", async () => {
      FAILING.add("o3");
      await c.scheduleNewOrchestration(parent, "o3", "js-rw-purged");
      let st = await finish("js-rw-purged");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      const purged = await c.purgeOrchestration("js-rw-purged:child");
      assert.equal(purged.deletedInstanceCount, 1);
      FAILING.delete("o3");
      await c.rewindInstance("js-rw-purged", "purged and retried");
      st = await finish("js-rw-purged");
      assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, JSON.stringify(st.failureDetails));
      assert.deepEqual(JSON.parse(st.serializedOutput), ["charged o3", "shipped o3"]);
      assert.equal((await finish("js-rw-purged:child")).runtimeStatus, OrchestrationStatus.COMPLETED);
      assert.deepEqual([runs("charge:o3"), runs("ship:o3")], [1, 2]);
    });

    await scenario("rewinding twice: after a second failure", async () => {
      FAILING.add("o4");
      await c.scheduleNewOrchestration(order, "o4", "js-rw-twice");
      assert.equal((await finish("js-rw-twice")).runtimeStatus, OrchestrationStatus.FAILED);
      await c.rewindInstance("js-rw-twice", "first");
      let st = await finish("js-rw-twice");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      assert.equal(runs("ship:o4"), 2);
      FAILING.delete("o4");
      await c.rewindInstance("js-rw-twice", "second");
      st = await finish("js-rw-twice");
      assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, JSON.stringify(st.failureDetails));
      assert.deepEqual([runs("charge:o4"), runs("reserve:o4"), runs("ship:o4")], [1, 1, 3]);
      assert.deepEqual((await rewinds("js-rw-twice")).map((e) => e.reason), ["first", "second"]);
    });

    await scenario("a rewind without a reason", async () => {
      FAILING.add("o5");
      await c.scheduleNewOrchestration(order, "o5", "js-rw-no-reason");
      assert.equal((await finish("js-rw-no-reason")).runtimeStatus, OrchestrationStatus.FAILED);
      FAILING.delete("o5");
      await c.rewindInstance("js-rw-no-reason");
      assert.equal((await finish("js-rw-no-reason")).runtimeStatus, OrchestrationStatus.COMPLETED);
      const marks = await rewinds("js-rw-no-reason");
      assert.equal(marks.length, 1);
      assert.equal(marks[0].reason, undefined);
    });

    // The SDK's rewind.spec.ts, positive cases (each "requires backend support").
    await scenario("SDK spec: should rewind a failed orchestration instance", async () => {
      const instanceId = "js-rw-spec-test";
      await c.scheduleNewOrchestration(failOnceOrchestrator, 1, instanceId);
      const failedState = await c.waitForOrchestrationCompletion(instanceId, true, 30);
      assert.ok(failedState);
      assert.equal(failedState.runtimeStatus, OrchestrationStatus.FAILED);
      assert.match(failedState.failureDetails.message, /First attempt failed!/);
      await c.rewindInstance(instanceId, "Testing rewind functionality");
      const rewindedState = await c.waitForOrchestrationCompletion(instanceId, true, 30);
      assert.ok(rewindedState);
      assert.equal(rewindedState.runtimeStatus, OrchestrationStatus.COMPLETED);
      assert.match(rewindedState.serializedOutput, /Success on attempt/);
    });
    await scenario("SDK spec: should rewind a failed orchestration with a descriptive reason", async () => {
      const instanceId = "js-rw-spec-reason";
      await c.scheduleNewOrchestration(failOnceOrchestrator, 1, instanceId);
      const failedState = await c.waitForOrchestrationCompletion(instanceId, true, 30);
      assert.equal(failedState.runtimeStatus, OrchestrationStatus.FAILED);
      await c.rewindInstance(instanceId, "Rewinding due to transient network failure");
      const rewindedState = await c.waitForOrchestrationCompletion(instanceId, true, 30);
      assert.equal(rewindedState.runtimeStatus, OrchestrationStatus.COMPLETED);
    });
    // The spec's negative cases.
    await scenario("SDK spec: rewinding a running orchestration throws", async () => {
      const instanceId = "js-rw-spec-running";
      await c.scheduleNewOrchestration(waitingOrchestrator, undefined, instanceId);
      await c.waitForOrchestrationStart(instanceId, false, 30);
      try {
        await assert.rejects(c.rewindInstance(instanceId, "Test rewind"), (e) => {
          assert.match(e.message, /not allow|precondition|running/i);
          assert.equal(e.cause && e.cause.code, 9);
          return true;
        });
      } finally {
        await c.terminateOrchestration(instanceId, "Test cleanup");
        await c.waitForOrchestrationCompletion(instanceId, false, 30);
      }
    });
    await scenario("SDK spec: rewinding a non-existent, completed or terminated instance throws", async () => {
      await assert.rejects(c.rewindInstance("js-rw-spec-nobody", "Test rewind"), (e) => e.cause && e.cause.code === 5);
      await c.scheduleNewOrchestration(failOnceOrchestrator, 5, "js-rw-spec-completed");
      assert.equal((await finish("js-rw-spec-completed")).runtimeStatus, OrchestrationStatus.FAILED);
      await c.rewindInstance("js-rw-spec-completed");
      assert.equal((await finish("js-rw-spec-completed")).runtimeStatus, OrchestrationStatus.COMPLETED);
      await assert.rejects(c.rewindInstance("js-rw-spec-completed", "Test rewind"), /Completed/);
      await c.scheduleNewOrchestration(waitingOrchestrator, undefined, "js-rw-spec-terminated");
      await c.waitForOrchestrationStart("js-rw-spec-terminated", false, 30);
      await c.terminateOrchestration("js-rw-spec-terminated", "Terminating for test");
      const terminated = await c.waitForOrchestrationCompletion("js-rw-spec-terminated", false, 30);
      assert.equal(terminated.runtimeStatus, OrchestrationStatus.TERMINATED);
      await assert.rejects(c.rewindInstance("js-rw-spec-terminated", "Test rewind"), /Terminated/);
      await assert.rejects(c.rewindInstance("", "Test rewind"), /instanceId is required/);
    });
  } finally {
    await worker.stop();
    await c.stop();
  }
  report("rewind");
}

run(main);
