// What the JavaScript scenario scripts share: running scenarios that record their checks, the
// closing report the Rust test reads, and running `main`.
//
// Each script runs as `node SCRIPT.js HOST:PORT` and requires this file as "./checks". A check
// is an assertion: `scenario` records a failure and lets the others run; `report` prints every
// failure and exits non-zero, or prints the line the Rust test waits for:
// `all N JavaScript SDK <kind> checks passed`.
"use strict";

const done = [];
const failed = [];

// Runs one scenario's checks; a failure is recorded and the others still run.
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

// Exits non-zero listing the failed scenarios, or says that all `kind` checks passed.
function report(kind) {
  if (failed.length > 0) {
    console.log(["FAILED scenarios:", ...failed].join("\n"));
    process.exit(1);
  }
  console.log(`all ${done.length} JavaScript SDK ${kind} checks passed`);
  process.exit(0);
}

// Runs the script's `main`; an error it throws exits non-zero.
function run(main) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

module.exports = { scenario, report, run };
