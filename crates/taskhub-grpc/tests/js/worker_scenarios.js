// The official Durable Task JavaScript SDK (@microsoft/durabletask-js, pinned in
// scripts/with-js-sdk.sh) as a WORKER against Taskhub's gRPC endpoint.
//
// Run by tests/js_sdk_worker.rs as `node worker_scenarios.js HOST:PORT` (NODE_PATH: the SDK's
// node_modules), against a Taskhub worker whose registry is empty: every orchestration and
// activity below runs in this process. Every check is an assertion; any failure exits non-zero.
"use strict";

const assert = require("node:assert/strict");
const {
  TaskHubGrpcClient,
  TaskHubGrpcWorker,
  OrchestrationStatus,
  whenAll,
} = require("@microsoft/durabletask-js");

const ADDR = process.argv[2];
const done = [];
const failed = [];

async function scenario(name, body) {
  try {
    await body();
    done.push(name);
    console.log(`ok: ${name}`);
  } catch (e) {
    failed.push(`${name}: ${e && e.stack ? e.stack : e}`);
    console.log(`FAILED: ${name}: ${e}`);
  }
}

// Activities.
const hello = async (_ctx, city) => `Hello ${city}!`;
const double = async (_ctx, x) => 2 * x;
const boom = async () => {
  throw new Error("Kah-BOOOOM!!!");
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

const HELLO = ["Hello Tokyo!", "Hello Seattle!", "Hello London!"];

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR });
  for (const fn of [sequence, fanOut, parent, sleeper, waiter, failing]) worker.addOrchestrator(fn);
  for (const fn of [hello, double, boom]) worker.addActivity(fn);
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

  try {
    await c.scheduleNewOrchestration(sequence, undefined, "js-seq");
    await c.scheduleNewOrchestration(fanOut, 50, "js-fan");
    await c.scheduleNewOrchestration(parent, undefined, "js-par");
    await c.scheduleNewOrchestration(sleeper, 1, "js-sleep");
    await c.scheduleNewOrchestration(failing, undefined, "js-fail");

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
    await scenario("durable timer", async () => {
      assert.ok((await output("js-sleep")) >= 1);
    });
    await scenario("external event", async () => {
      await c.scheduleNewOrchestration(waiter, undefined, "js-wait");
      const deadline = Date.now() + 60000;
      for (;;) {
        const st = await c.getOrchestrationState("js-wait");
        if (st && st.serializedCustomStatus === JSON.stringify("waiting")) break;
        assert.ok(Date.now() < deadline, "js-wait never waited");
        await new Promise((r) => setTimeout(r, 50));
      }
      await c.raiseOrchestrationEvent("js-wait", "Go", { approved: true });
      assert.deepEqual(await output("js-wait"), { approved: true });
    });
    await scenario("failure with its details", async () => {
      const st = await finish("js-fail");
      assert.equal(st.runtimeStatus, OrchestrationStatus.FAILED);
      assert.ok(st.failureDetails.message.includes("Kah-BOOOOM!!!"), st.failureDetails.message);
    });
  } finally {
    await worker.stop();
    await c.stop();
  }
  if (failed.length > 0) {
    console.log(["FAILED scenarios:", ...failed].join("\n"));
    process.exit(1);
  }
  console.log(`all ${done.length} JavaScript SDK worker checks passed`);
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
