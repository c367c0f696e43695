#!/usr/bin/env bash
# tests/galaxy/matrix.sh PAIR...: the per-version checks (make matrix). A PAIR is PYTHON:CORE:ANSIBLE, e.g.
# 3.11:2.19.14:12.3.0 (Python, ansible-core, and the community package that brings the collections Galaxy would).
# For each pair, in its own venv: the unit tests (except those marked lab_engine or torch: they test vLLM, SGLang,
# torch and TileLang, not ansible-core), ansible-test sanity on the built tarball, and the tarball in an empty user project (validation
# of inventories/ring4 there and in the checkout). No container starts; the pairs run at the same time, each with
# its log in .cache/matrix/logs/, and a summary gives every step's seconds.
#   tests/galaxy/matrix.sh --venv PAIR   only make (or reuse) that pair's venv; prints its folder
# Venvs are cached under .cache/matrix/, remade when requirements-dev.txt, setup.py, the venv script or (for a
# pair on .venv's Python, whose packages it links) .venv change.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache="$root/.cache/matrix"

venv() {  # venv PAIR: the pair's venv folder, made when missing or stale
  local py core ansible dir key lock
  IFS=: read -r py core ansible <<< "$1"
  dir="$cache/py$py-core${core%.*}"
  key=$(cat "$root/requirements-dev.txt" "$root/requirements-torch.txt" "$root/setup.py" "$root/tests/galaxy/matrix_venv.sh" \
        <(echo "$1") <(stat -c %Y "$root/.venv/.installed" 2>/dev/null) | sha256sum | cut -c1-16)
  # One maker per venv: make test builds the lab engine's venv (the 3.11 pair) while the per-version checks beside it
  # may want the same one; the second waits for it instead of making it again on top.
  mkdir -p "$cache"
  exec {lock}> "$dir.lock"
  flock "$lock"
  if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$key" ]; then
    echo "== venv $1 (making $dir)" >&2
    "$root/tests/galaxy/matrix_venv.sh" "$dir" "$py" "$core" "$ansible" >&2
    echo "$key" > "$dir/.installed"
  fi
  exec {lock}>&-
  echo "$dir"
}

if [ "${1:-}" = "--venv" ]; then venv "$2"; exit; fi
[ $# -gt 0 ] || { echo "usage: $0 PAIR... (PYTHON:CORE:ANSIBLE)" >&2; exit 2; }

mkdir -p "$cache/logs"
dirs=()
for pair in "$@"; do dirs+=("$(venv "$pair")"); done  # one at a time: pip downloads

# MATRIX_UNIT_SAMPLE=FRACTION (make test sets it): the last pair runs every unit test, each other pair that fraction
# of them, another one on each pair and each run (tests/conftest.py's DS41F_UNIT_SAMPLE, seed + the pair's index;
# the summary prints it, so a failure replays). Unset, every pair runs every test.
seed=${MATRIX_UNIT_SEED:-$RANDOM}

check() {  # check PAIR DIR INDEX LAST: the pair's steps in order; "step wall-seconds cpu-seconds rc" lines in its .steps
  local name log steps rc real user sys sample="" TIMEFORMAT="%R %U %S"
  if [ -n "${MATRIX_UNIT_SAMPLE:-}" ] && [ "$4" != last ]; then sample="$((seed + $3)):$MATRIX_UNIT_SAMPLE"; fi
  name=$(basename "$2")
  log="$cache/logs/$name.log" steps="$cache/logs/$name.steps"
  : > "$log"; : > "$steps"
  for step in unit sanity user-project; do
    case $step in
      unit) cmd=(env DS41F_UNIT_SAMPLE="$sample" pytest -q -p no:cacheprovider -m "not lab_engine and not torch"
                 tests/unit) ;;
      sanity) cmd=(env DS41F_SANITY_DIR="${TMPDIR:-/tmp}/ds41f-sanity-$name" tests/galaxy/sanity.sh) ;;
      user-project) cmd=(tests/galaxy/user_project.sh) ;;
    esac
    echo "== $1 $step: ${cmd[*]}" >> "$log"
    rc=0
    # CPU seconds (the step's processes, user + system) beside the wall time: on a shared machine the wall time
    # says little, the CPU time what two dedicated cores would need.
    { time { (cd "$root" && PATH="$2/bin:$PATH" "${cmd[@]}") >> "$log" 2>&1 || rc=$?; }; } 2> "$log.time"
    read -r real user sys < "$log.time"
    echo "$step ${real%.*} $(( ${user%.*} + ${sys%.*} )) $rc" >> "$steps"
  done
}

start=$(date +%s)
pids=()
for i in "${!dirs[@]}"; do
  check "${@:i+1:1}" "${dirs[$i]}" "$i" "$([ $((i + 1)) = ${#dirs[@]} ] && echo last)" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

failed=0 cpu_total=0
echo "== per-version checks: $(( $(date +%s) - start )) s, the pairs at the same time (step: wall s / CPU s)"
[ -z "${MATRIX_UNIT_SAMPLE:-}" ] || echo "   unit tests: every one on the last pair, a sample of $MATRIX_UNIT_SAMPLE on the others" \
  "(DS41F_UNIT_SAMPLE=SEED:$MATRIX_UNIT_SAMPLE replays one, SEED $seed on the first pair, one more on each next)"
for i in "${!dirs[@]}"; do
  name=$(basename "${dirs[$i]}")
  line="$(printf '%-22s' "${@:i+1:1}")"
  while read -r step seconds cpu rc; do
    line+="  $step $([ "$rc" = 0 ] && echo ok || echo "FAILED($rc)") ${seconds}/${cpu}"
    cpu_total=$(( cpu_total + cpu ))
    [ "$rc" = 0 ] || failed=1
  done < "$cache/logs/$name.steps"
  echo "$line"
  # a log without pytest's summary (it died first) still leaves the others' lines and the failure report below
  { grep -h "^[0-9]* passed\|^[0-9]* failed\|passed.*deselected\|failed.*deselected" "$cache/logs/$name.log" || true; } \
    | sed 's/^/    /'
done
echo "   CPU: $cpu_total s in all, about $(( cpu_total / $(nproc) )) s of wall time on this machine's $(nproc) cores alone"
if [ "$failed" != 0 ]; then
  for i in "${!dirs[@]}"; do
    name=$(basename "${dirs[$i]}")
    grep -q " [1-9][0-9]*$" "$cache/logs/$name.steps" || continue
    echo "== $name: what failed (its log: $cache/logs/$name.log)"
    grep -E "^(FAILED|ERROR) |^FAIL|^ERROR:" "$cache/logs/$name.log" || tail -40 "$cache/logs/$name.log"
  done
  exit 1
fi
