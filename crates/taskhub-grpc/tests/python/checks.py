"""What the Python scenario scripts share: recording checks, running scenarios, waiting, and
the closing report that the Rust test reads.

Each script runs as `python SCRIPT.py HOST:PORT` (its folder is on `sys.path`, so
`import checks` finds this file). A check is an assert: `scenario` records a failure and lets
the others run; `report` prints every failure and exits non-zero, or prints the line the Rust
test waits for: `all N Python SDK <kind> checks passed`.
"""

import sys
import time

done = []
failed = []


def check(name):
    """Records a passed check."""
    done.append(name)
    print(f"ok: {name}", flush=True)


def scenario(name, body):
    """Runs one scenario's checks; a failure is recorded and the others still run."""
    try:
        body()
        check(name)
    except Exception as e:  # noqa: BLE001 - every failure is reported at the end
        failed.append(f"{name}: {type(e).__name__}: {e}")
        print(f"FAILED: {name}: {e!r}", flush=True)


def until(predicate, what, timeout=60.0):
    """Polls `predicate` until it answers something truthy (returned), at most `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def report(kind):
    """Exits non-zero listing the failed scenarios, or says that all `kind` checks passed."""
    if failed:
        print("\n".join(["FAILED scenarios:"] + failed), flush=True)
        sys.exit(1)
    print(f"all {len(done)} Python SDK {kind} checks passed", flush=True)
