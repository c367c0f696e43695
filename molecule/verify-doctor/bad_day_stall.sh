# bad_day.yml: stop the head's vLLM worker (SIGSTOP), as a hung collective or kernel leaves it: the API still
# answers, no token comes. With BD_REQUESTS=N (N > 0), N long streamed requests are sent first and the core is
# stopped once the engine's own gauge shows them running. The pids go to the head's /run/bad-day-stopped, for the
# SIGCONT that puts them back. BD_HEAD: the head's lab container.
set -euo pipefail
podman exec -i "$BD_HEAD" bash -s "$BD_REQUESTS" <<'HEAD'
set -euo pipefail
n=$1
set -a; . /etc/ds41f/serve/api-key.env; set +a
api=http://127.0.0.1:8000
metric() {
  curl -sf -m 5 -H "Authorization: Bearer $VLLM_API_KEY" $api/metrics | awk -v n="$1" '$1 ~ "^" n "({|$)" {s += $2} END {print s + 0}'
}
if [ "$n" -gt 0 ]; then
  for _ in $(seq 1 "$n"); do
    setsid curl -sN -m 300 -o /dev/null -H "Authorization: Bearer $VLLM_API_KEY" -H 'Content-Type: application/json' \
      -d '{"model": "deepseek-v4.1-flash", "messages": [{"role": "user", "content": "Count to a thousand."}],
           "max_tokens": 1900, "ignore_eos": true, "stream": true}' $api/v1/chat/completions < /dev/null > /dev/null 2>&1 &
  done
  for _ in $(seq 1 60); do
    [ "$(metric vllm:num_requests_running)" = "$n" ] && break
    sleep 0.5
  done
fi
# The worker that runs the model (vLLM's multiproc executor names it VLLM::Worker), as a hung collective or kernel
# leaves it; the engine core itself where there is no separate worker.
proc=Worker
grep -qs '^VLLM::Worker' /proc/[0-9]*/cmdline || proc=EngineCore
pids=$(for p in /proc/[0-9]*; do tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q "^VLLM::$proc" && echo "${p#/proc/}"; done || true)
[ -n "$pids" ] || { echo "no VLLM::$proc process on the head" >&2; exit 1; }
kill -STOP $pids
echo $pids >> /run/bad-day-stopped
echo "stopped $pids; requests running: $(metric vllm:num_requests_running)"
HEAD
