#!/usr/bin/env bash
# Runs the tests that start worker processes N times in a row under CPU load, stopping at the
# first failure (it prints the run number and the failing output).
#
#   scripts/loop-tests.sh [N]          # N defaults to 50
#   LOAD=none scripts/loop-tests.sh 5  # without the CPU burners
#   nice scripts/loop-tests.sh 50      # on a shared machine
#
# The test binaries are built once (debug: the profile every other test run uses, and the
# slower one, so timing assumptions show up sooner) and then run directly, not through cargo.
# The load is one `yes > /dev/null` per core (LOAD=yes, the default), started with this
# script's niceness so that tests and burners compete on equal terms.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-50}
load=${LOAD:-yes}
logs=${LOOP_LOGS:-target/loop-tests}
mkdir -p "$logs"

# The multi-process tests: binary (package/test target) and the exact test names in it.
# The worker-process entry points (ignored tests) are started by the tests themselves.
declare -A tests=(
    [taskhub/kill9]="kill9_workers_lose_nothing"
    [taskhub/entities_kill9]="entity_workers_killed_apply_every_operation_once"
    [taskhub-cli/entities]="entities_can_be_signalled_listed_shown_deleted_and_cleaned"
    [taskhub/multi_worker]="workers_come_and_go_and_lose_nothing partition_count_raised_and_lowered_during_a_run"
    [taskhub/paused_worker]="a_resumed_worker_does_not_steal_from_a_live_one"
    [taskhub-cli/demo]="demo_on_three_worker_processes_survives_a_kill_a_stop_and_a_join"
    [taskhub-cli/partitions]="partitions_are_shown_moved_and_monitored"
    [taskhub-cli/dead_letters]="malformed_message_is_listed_and_replayed"
    [taskhub-cli/instances]="start_list_show_history_raise_terminate_purge_round_trip"
    [taskhub-cli/errors]="settings_resolve_file_then_environment_then_flags"
    [taskhub-cli/hub_delete]="a_hub_is_deleted_only_when_confirmed_and_idle a_purge_whose_budget_runs_out_exits_3_and_says_so"
    [taskhub-cli/payload_input]="large_start_input_and_event_data_from_a_file_and_from_stdin"
)

echo "building the test binaries once..."
declare -A bins=()
for key in "${!tests[@]}"; do
    pkg=${key%/*}
    target=${key#*/}
    exe=$(cargo test --locked -p "$pkg" --test "$target" --no-run --message-format=json 2>/dev/null |
        jq -r --arg t "$target" 'select(.reason == "compiler-artifact" and .target.name == $t
            and (.target.kind | index("test")) and .executable != null) | .executable' | tail -1)
    if [[ -z "$exe" || ! -x "$exe" ]]; then
        echo "could not build $key" >&2
        cargo test --locked -p "$pkg" --test "$target" --no-run >&2
        exit 1
    fi
    # Every listed test must exist in the binary (a renamed test must not silently drop out).
    for name in ${tests[$key]}; do
        listed=$("$exe" --list --exact "$name" 2>/dev/null || true)
        if [[ "$listed" != *"$name: test"* ]]; then
            echo "$key has no test named $name" >&2
            exit 1
        fi
    done
    bins[$key]=$exe
done

burners=()
stop_burners() {
    for pid in "${burners[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
}
trap stop_burners EXIT
if [[ "$load" == yes ]]; then
    for _ in $(seq "$(nproc)"); do
        yes >/dev/null &
        burners+=($!)
    done
    echo "load: ${#burners[@]} busy loop(s), one per core"
fi

start=$(date +%s)
for run in $(seq "$runs"); do
    run_start=$(date +%s)
    for key in $(printf '%s\n' "${!tests[@]}" | sort); do
        log="$logs/run-$run-${key//\//-}.log"
        # shellcheck disable=SC2086 # the names are separate arguments
        if ! "${bins[$key]}" --exact ${tests[$key]} --test-threads 1 >"$log" 2>&1; then
            echo "FAILED: run $run of $runs, $key (log: $log)"
            echo "---- output ----"
            tail -n 200 "$log"
            exit 1
        fi
        rm -f "$log"
    done
    now=$(date +%s)
    echo "run $run/$runs passed in $((now - run_start)) s (total $((now - start)) s)"
done
echo "all $runs runs passed in $(($(date +%s) - start)) s"
