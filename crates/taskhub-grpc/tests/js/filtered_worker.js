// One Durable Task JavaScript SDK worker process with the SDK's own work-item filters
// (`workItemFilters: "auto"`: built from what it registered), for the mixed-language hub of
// tests/sdk_mixed_filters.rs: `node filtered_worker.js HOST:PORT` (NODE_PATH: the SDK's
// node_modules) runs until killed and prints "worker js started" once started.
//
// Orchestrations `JsGreet` (its activity `JsWhere`) and `JsCross` (`JsWhere`, then the Rust
// activity `RustWhere` run by Taskhub's own registry, then the Python worker's `PyWhere`), and
// the activity `JsWhere`, which answers "javascript: INPUT".
"use strict";

const { TaskHubGrpcWorker } = require("@microsoft/durabletask-js");

const ADDR = process.argv[2];

const jsWhere = async (_ctx, what) => `javascript: ${what}`;

const jsGreet = async function* (ctx, what) {
  const where = yield ctx.callActivity("JsWhere", what);
  return ["javascript orchestration", where];
};

const jsCross = async function* (ctx, what) {
  const js = yield ctx.callActivity("JsWhere", what);
  const rust = yield ctx.callActivity("RustWhere", what);
  const py = yield ctx.callActivity("PyWhere", what);
  return ["javascript orchestration", js, rust, py];
};

async function main() {
  const worker = new TaskHubGrpcWorker({ hostAddress: ADDR, workItemFilters: "auto" });
  worker.addNamedOrchestrator("JsGreet", jsGreet);
  worker.addNamedOrchestrator("JsCross", jsCross);
  worker.addNamedActivity("JsWhere", jsWhere);
  await worker.start();
  console.log("worker js started");
  // Runs until killed.
  setInterval(() => {}, 1 << 30);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
