// Durable entities written with the official Durable Task JavaScript SDK
// (@microsoft/durabletask-js, pinned in scripts/with-js-sdk.sh), run by Taskhub.
//
// Run by tests/js_sdk_worker.rs as `node entity_scenarios.js HOST:PORT` (NODE_PATH: the SDK's
// node_modules), against a Taskhub worker whose registry is empty: every entity operation and
// orchestration below runs in this process (entity batches are `entityRequest` work items).
// Every check is an assertion; any failure exits non-zero.
"use strict";

const assert = require("node:assert/strict");
const {
  TaskHubGrpcClient,
  TaskHubGrpcWorker,
  OrchestrationStatus,
  EntityInstanceId,
  TaskEntity,
} = require("@microsoft/durabletask-js");
const { scenario, report, run } = require("./checks");

const ADDR = process.argv[2];

// A function-style entity (an object with `run`): add, get, fail.
const counter = () => ({
  run(op) {
    const value = op.state.getState(0);
    switch (op.name) {
      case "add": {
        const next = value + op.getInput();
        op.state.setState(next);
        return next;
      }
      case "get":
        return value;
      case "fail":
        op.state.setState(value + 1000); // rolled back: the operation fails
        throw new Error(`counter refuses: ${op.getInput()}`);
      default:
        throw new Error(`no operation ${op.name}`);
    }
  },
});

// A class-based entity: a balance that cannot go below zero.
class Account extends TaskEntity {
  initializeState() {
    return 0;
  }
  deposit(amount) {
    this.state += amount;
    return this.state;
  }
  withdraw(amount) {
    if (amount > this.state) throw new Error(`insufficient funds: ${this.state} < ${amount}`);
    this.state -= amount;
    return this.state;
  }
  balance() {
    return this.state;
  }
}

// Orchestrations.
const callCounter = async function* (ctx, key) {
  const e = new EntityInstanceId("counter", key);
  ctx.entities.signalEntity(e, "add", 1);
  const total = yield ctx.entities.callEntity(e, "add", 4);
  let error = "no failure";
  try {
    yield ctx.entities.callEntity(e, "fail", "on purpose");
  } catch (err) {
    error = String(err && err.message ? err.message : err);
  }
  const after = yield ctx.entities.callEntity(e, "get");
  return { total, error, after };
};

const transfer = async function* (ctx, args) {
  const src = new EntityInstanceId("account", args.from);
  const dst = new EntityInstanceId("account", args.to);
  const lock = yield ctx.entities.lockEntities(src, dst);
  let outcome = "refused";
  const balance = yield ctx.entities.callEntity(src, "balance");
  if (balance >= args.amount) {
    yield ctx.entities.callEntity(src, "withdraw", args.amount);
    yield ctx.entities.callEntity(dst, "deposit", args.amount);
    outcome = "moved";
  }
  lock.release();
  return outcome;
};

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR });
  worker.addNamedEntity("counter", counter);
  worker.addNamedEntity("account", () => new Account());
  for (const fn of [callCounter, transfer]) worker.addOrchestrator(fn);
  await worker.start();
  const c = new TaskHubGrpcClient({ hostAddress: ADDR });

  const stateOf = async (id) => {
    const meta = await c.getEntity(id, true);
    return meta === undefined ? undefined : meta.state;
  };
  const until = async (what, probe) => {
    const deadline = Date.now() + 60000;
    while (!(await probe())) {
      assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const output = async (id) => {
    const st = await c.waitForOrchestrationCompletion(id, true, 60);
    assert.ok(st, `${id} exists`);
    assert.equal(st.runtimeStatus, OrchestrationStatus.COMPLETED, `${id}: ${JSON.stringify(st.failureDetails)}`);
    return st.serializedOutput === undefined ? undefined : JSON.parse(st.serializedOutput);
  };

  try {
    await c.scheduleNewOrchestration(callCounter, "called", "js-call-counter");
    await scenario("function entity: signals from a client, get state, failed operation", async () => {
      const e = new EntityInstanceId("counter", "signals");
      for (let n = 1; n <= 5; n++) await c.signalEntity(e, "add", n);
      await c.signalEntity(e, "fail", "x");
      await c.signalEntity(e, "add", 1);
      await until("counter 'signals' at 16", async () => (await stateOf(e)) === 16);
    });
    await scenario("class entity: signals, a failing method, get state", async () => {
      const e = new EntityInstanceId("account", "solo");
      await c.signalEntity(e, "deposit", 40);
      await c.signalEntity(e, "withdraw", 100);
      await c.signalEntity(e, "withdraw", 15);
      await until("account 'solo' at 25", async () => (await stateOf(e)) === 25);
    });
    await scenario("call and signal an entity from an orchestration (result and failure)", async () => {
      const out = await output("js-call-counter");
      assert.equal(out.total, 5, JSON.stringify(out));
      assert.ok(out.error.includes("counter refuses: on purpose"), JSON.stringify(out));
      assert.equal(out.after, 5, JSON.stringify(out));
    });
    await scenario("critical section over two entities from orchestrations", async () => {
      const a = new EntityInstanceId("account", "a");
      const b = new EntityInstanceId("account", "b");
      await c.signalEntity(a, "deposit", 50);
      await c.signalEntity(b, "deposit", 50);
      await until("both accounts at 50", async () => (await stateOf(a)) === 50 && (await stateOf(b)) === 50);
      const ids = [];
      for (let i = 0; i < 6; i++) {
        const args = i % 2 === 0 ? { from: "a", to: "b", amount: 20 } : { from: "b", to: "a", amount: 20 };
        ids.push(await c.scheduleNewOrchestration(transfer, args, `js-transfer-${i}`));
      }
      for (const id of ids) assert.ok(["moved", "refused"].includes(await output(id)));
      const [x, y] = [await stateOf(a), await stateOf(b)];
      assert.equal(x + y, 100, `money created or lost: ${x} + ${y}`);
      await c.signalEntity(a, "deposit", 1);
      await until("a signal after the critical sections", async () => (await stateOf(a)) + (await stateOf(b)) === 101);
    });
  } finally {
    await worker.stop();
    await c.stop();
  }
  report("entity");
}

run(main);
