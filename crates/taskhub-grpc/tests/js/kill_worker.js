// One Durable Task JavaScript SDK worker process, for the SIGKILL test of tests/sdk_kill.rs:
// `node kill_worker.js HOST:PORT NAME SLOW_SECONDS` (NODE_PATH: the SDK's node_modules) runs
// until killed and prints "worker NAME started" once started. Its orchestration `TwoSteps` runs
// the activity `Step`, then `SlowStep`, which prints "slow step started by NAME" and sleeps
// SLOW_SECONDS; each activity answers which worker ran it ("WHAT by NAME").
"use strict";

const { TaskHubGrpcWorker } = require("@microsoft/durabletask-js");

const [ADDR, NAME, SLOW_SECONDS] = process.argv.slice(2);

const step = async (_ctx, what) => `${what} by ${NAME}`;
const slowStep = async (_ctx, what) => {
  console.log(`slow step started by ${NAME}`);
  await new Promise((resolve) => setTimeout(resolve, Number(SLOW_SECONDS) * 1000));
  return `${what} by ${NAME}`;
};

const twoSteps = async function* (ctx) {
  const first = yield ctx.callActivity("Step", "step 1");
  const second = yield ctx.callActivity("SlowStep", "slow step");
  return [first, second];
};

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR });
  worker.addNamedOrchestrator("TwoSteps", twoSteps);
  worker.addNamedActivity("Step", step);
  worker.addNamedActivity("SlowStep", slowStep);
  await worker.start();
  console.log(`worker ${NAME} started`);
  // Runs until killed.
  setInterval(() => {}, 1 << 30);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
