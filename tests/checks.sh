#!/usr/bin/env bash
# tests/checks.sh: make test's checks as three streams at once, so that no stream waits on another's downloads or
# idle time (make checks; make test runs it between the host-state snapshots).
#   molecule  the scenarios that need no lab engine first, then, once the engine is built, those that do
#             (LAB_ENGINE_SCENARIOS); output on the terminal, as `make molecule` prints it
#   engines   the lab engine's venv, the engine and SGLang's parser (mostly downloads and unpacking), then the unit
#             tests that run real engines (make unit-engines, with time budgets of their own); .cache/engines.log
#   beside    every check that starts no container (lint, the controller's unit tests, sanity, the user project and
#             Galaxy's import checks, the per-version checks) in a session of its own at the lowest priority
#             (tests/beside.sh); .cache/beside.log
# The molecule stream stops at its first failed scenario; the others run to their end either way. Both logs are
# printed at the end, and any stream failing fails the target.
# SCENARIO_SAMPLE=N (make test sets it): the scenarios of SCENARIOS_ALWAYS, and N of the others chosen at random,
# SCENARIO_SEED (printed) choosing them; `make molecule` runs every scenario (its latest run is in docs/measured.md).
set -uo pipefail
make="${MAKE:-make} --no-print-directory"
scenarios=${SCENARIOS:?the scenarios to run}
engine_scenarios=${LAB_ENGINE_SCENARIOS:-}
if [ -n "${SCENARIO_SAMPLE:-}" ]; then
  seed=${SCENARIO_SEED:-$RANDOM}
  always=() others=()
  for s in $scenarios; do
    if [[ " ${SCENARIOS_ALWAYS:-} " == *" $s "* ]]; then always+=("$s"); else others+=("$s"); fi
  done
  picked=$(printf '%s\n' "${others[@]}" | shuf -n "$SCENARIO_SAMPLE" --random-source=<(yes "$seed") | sort | xargs)
  echo "== scenarios: always ${always[*]}; $SCENARIO_SAMPLE of the other ${#others[@]} at random: $picked" \
       "(SCENARIO_SEED=$seed picks them again; make molecule runs all)"
  scenarios=$(for s in $scenarios; do [[ " ${always[*]} $picked " == *" $s "* ]] && echo "$s"; done | xargs)
fi
without=() with=()
for s in $scenarios; do
  if [[ " $engine_scenarios " == *" $s "* ]]; then with+=("$s"); else without+=("$s"); fi
done
mkdir -p .cache
built=.cache/engine.built
rm -f "$built"
start=$(date +%s)
say() { echo "== [checks $(date +%T), $(( $(date +%s) - start )) s] $*"; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }  # busy and all CPU ticks
read -r busy0 all0 < <(busy)

# A stream's log ends with its seconds and exit status.
( setsid -w tests/beside.sh $make -k ${BESIDE:?the container-free checks}; rc=$?
  say "beside ended, exit $rc"; exit $rc ) > .cache/beside.log 2>&1 &
beside=$!
( $make engine sglang-parser proxy-nginx && touch "$built" && say "lab engine built" && $make unit-engines; rc=$?
  say "engines ended, exit $rc"; exit $rc ) > .cache/engines.log 2>&1 &
engines=$!
say "beside (pid $beside, .cache/beside.log): $BESIDE; engines (pid $engines, .cache/engines.log): build, then" \
    "make unit-engines"

rc=0
if [ ${#without[@]} -gt 0 ]; then
  say "the scenarios without the lab engine: ${without[*]}"
  $make molecule SCENARIOS="${without[*]}" || rc=$?
fi
if [ ${#with[@]} -gt 0 ] && [ "$rc" = 0 ]; then
  say "waiting for the lab engine's build (.cache/engines.log)"
  while [ ! -e "$built" ] && kill -0 "$engines" 2>/dev/null; do sleep 5; done
  if [ -e "$built" ]; then
    say "the scenarios with the lab engine: ${with[*]}"
    $make molecule SCENARIOS="${with[*]}" || rc=$?
  else
    say "the lab engine did not build: ${with[*]} not run (.cache/engines.log below)"
    rc=1
  fi
fi

failed=()
[ "$rc" = 0 ] || failed+=(molecule)
say "molecule done, exit $rc"
wait "$engines" || failed+=(engines)
say "engines done; .cache/engines.log:"
cat .cache/engines.log
wait "$beside" || failed+=(beside)
say "beside done; .cache/beside.log:"
cat .cache/beside.log
read -r busy1 all1 < <(busy)
say "the CPU was busy $(( 100 * (busy1 - busy0) / (all1 - all0 + 1) ))% of the time (all $(nproc) cores)"
if [ ${#failed[@]} -gt 0 ]; then say "FAILED: ${failed[*]}"; exit 1; fi
say "every stream passed"
