#!/usr/bin/env bash
# Instructions per unit of work, counted by valgrind's callgrind: a figure that does not depend
# on the machine's speed or load, unlike throughput and CPU time.
#
#   scripts/instructions.sh [scenario ...]        # default: hello5 sequential fanout events
#
# Each scenario runs twice under `valgrind --tool=callgrind` (the release build of
# taskhub-bench, SQLite `normal` unless TASKHUB_BENCH_ARGS says otherwise), at two scales whose
# unit counts differ by a factor of two; the difference of the two runs' instruction totals,
# divided by the difference of their units, is the cost of one unit: start-up, hub creation and
# shutdown cancel out. It prints that figure and the functions that account for most of the
# difference (self cost, per unit).
#
# Environment: SCALE (the smaller run's --scale, default 0.1), TOP (functions listed, 15),
# TASKHUB_BENCH_ARGS (extra bench arguments, e.g. "--durability full"), OUT (where the callgrind
# files go; default a temp dir that is deleted), BENCH (a bench binary to use instead of
# building the release one).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
SCALE="${SCALE:-0.1}"
TOP="${TOP:-15}"
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(hello5 sequential fanout events)
OUT_DIR="${OUT:-$(mktemp -d)}"
[ -n "${OUT:-}" ] || trap 'rm -rf "$OUT_DIR"' EXIT
mkdir -p "$OUT_DIR"

if [ -z "${BENCH:-}" ]; then
  cargo build --release --locked --quiet -p taskhub-bench
  BENCH=./target/release/taskhub-bench
fi

run() { # scenario scale -> writes $OUT_DIR/<scenario>-<scale>.{out,json}
  local s=$1 scale=$2
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file="$OUT_DIR/$s-$scale.out" \
    "$BENCH" "$s" --scale "$scale" ${TASKHUB_BENCH_ARGS:-} \
    >"$OUT_DIR/$s-$scale.json" 2>"$OUT_DIR/$s-$scale.log" \
    || { echo "instructions: $s at scale $scale failed:" >&2; tail -20 "$OUT_DIR/$s-$scale.log" >&2; exit 1; }
  callgrind_annotate --auto=no --threshold=100 "$OUT_DIR/$s-$scale.out" >"$OUT_DIR/$s-$scale.txt" 2>/dev/null
}

for s in "${SCENARIOS[@]}"; do
  small="$SCALE"
  large="$(python3 -c "print($SCALE * 2)")"
  run "$s" "$small"
  run "$s" "$large"
  python3 - "$OUT_DIR" "$s" "$small" "$large" "$TOP" <<'PY'
import json, re, sys
out, s, small, large, top = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def units(scale):
    recs = [json.loads(l) for l in open(f"{out}/{s}-{scale}.json") if l.strip()]
    rec = recs[0]
    return rec["n"], rec.get("unit", "units")

def totals(scale):
    total, funcs = None, {}
    for line in open(f"{out}/{s}-{scale}.txt"):
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*$", line)
        if m and ":" in m.group(2) and not m.group(2).startswith("=>"):
            funcs[m.group(2)] = int(m.group(1).replace(",", ""))
    return total, funcs

(n1, unit), (n2, _) = units(small), units(large)
(t1, f1), (t2, f2) = totals(small), totals(large)
per = (t2 - t1) / (n2 - n1)
name = unit.split("/")[0]
print(f"{s}: {per / 1e6:.3f} M instructions per {name.rstrip('s')} "
      f"({n1} and {n2}: {t1:,} and {t2:,} instructions)")
diff = sorted(((f2.get(k, 0) - f1.get(k, 0)) / (n2 - n1), k) for k in set(f1) | set(f2))
for cost, fn in reversed(diff[-top:]):
    where, _, function = fn.partition(":")
    print(f"  {cost:>12,.0f}  {100 * cost / per:5.1f}%  {(function or where)[:140]}")
PY
done
