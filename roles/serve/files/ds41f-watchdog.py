"""ds41f serving watchdog: restart a stalled tensor-parallel group once, then leave it to a person.

Run by ds41f-watchdog.service on the head (dgxspark.ds41f serve stage) with a JSON config:
    {"api_url": "http://127.0.0.1:8000", "key_file": "/etc/ds41f/serve/api-key.env", "model": "...",
     "interval_s": 30, "first_token_s": 20, "stalls": 2, "window_s": 3600, "ready_timeout_s": 3600,
     "restart": [[argv of each worker's restart]..., [argv of the head's restart]],
     "state_file": "/run/ds41f/watchdog.json", "records": "/var/lib/ds41f/releases/watchdog-restarts.jsonl",
     "textfile_dir": "/var/lib/prometheus/node-exporter"}

Every interval it judges the engine by progress (ds41f_engine_progress.py beside it, the collection's
plugins/module_utils/engine_progress.py: a streamed request with a first-token deadline, the /metrics token
counters before and after). After ``stalls`` stalled looks in a row (requests in flight, nothing moving; a
prefill that still moves is never a stall) it restarts the group in the serve stage's order - workers, then the
head - waits until /v1/models answers and a first token comes, and appends the restart to ``records`` (beside the
serve stage's release records). Each worker is restarted over ssh with the head's own key, which each worker's
authorized_keys lets run that one restart only, checked against the site's pinned host keys. A restart whose
command failed did not run: it is recorded as a failure (``failed_restarts``, ``last_failure``), not as a restart,
and the next stalls try again. The circuit breaker: a second stall within ``window_s`` of a restart that ran
restarts nothing; the group is left as it is and the state file and the journal say why. The state file is what
`ds41f status` and the doctor read; the same state goes to node_exporter's textfile folder as ds41f_watchdog.prom
(when ``textfile_dir`` is set).
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ds41f_engine_progress as progress  # noqa: E402  (installed beside this program)
import ds41f_textfile as textfile  # noqa: E402  (the same: plugins/module_utils/textfile.py)


def open_url(url, data=None, method=None, headers=None, timeout=10, validate_certs=True):
    """The calling convention engine_progress expects (ansible's open_url), over urllib."""
    return urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers or {}),
                                  timeout=timeout)


def api_key(path):
    """The key of the head's key file (VLLM_API_KEY=...), or None."""
    try:
        with open(path) as handle:
            for line in handle:
                name, sep, value = line.strip().partition("=")
                if sep and name == "VLLM_API_KEY":
                    return value
    except OSError:
        pass
    return None


def decide(state, verdict, now, config):
    """What to do after one look: 'ok', 'watch' (a stall, not yet enough in a row), 'restart', or 'breaker' (a
    stall within the window after a restart: restart nothing). Updates ``state``."""
    state.update(checked_at=now, verdict=verdict.get("state"), seen=verdict.get("seen"))
    if verdict.get("state") != "stalled":
        state["stalls"] = 0
        return "ok"
    state["stalls"] = state.get("stalls", 0) + 1
    if state["stalls"] < int(config["stalls"]):
        return "watch"
    last = state.get("last_restart")
    if last is not None and now - last < float(config["window_s"]):
        state.update(breaker="open", reason="stalled again %.0f s after the restart at %s (window %s s): the group "
                     "is left as it is. Fix: read docker logs on every rank, then ds41f run serve -e "
                     "'{\"serve_replace\": true}'" % (now - last, stamp(last), config["window_s"]))
        return "breaker"
    return "restart"


def stamp(when):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def log(message):
    print(message, flush=True)


def write_state(path, state, textfile_dir=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle, sort_keys=True)
    os.replace(tmp, path)
    if textfile_dir:
        textfile.write(textfile_dir, "ds41f_watchdog.prom", textfile.render(textfile.watchdog_metrics(state)))


def restart(config, key):
    """Workers, then the head (config's order); then readiness and a first token. (ran, ok, what happened): a
    restart command that failed (a worker the head cannot reach, a host key that is not the pinned one) stops there
    and the restart did not run; one that ran and brought no first token ran but is not ok."""
    for argv in config["restart"]:
        # What it restarts: a worker's from its ssh target on (root@<worker> docker restart ...), the head's whole.
        what = " ".join(argv[next((i for i, word in enumerate(argv) if "@" in word), 0):])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, False, "%s: %s" % (what, exc)
        if done.returncode != 0:  # ssh ends with its verdict ("... Host key verification failed.")
            said = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            return False, False, "%s: exit %d: %s" % (what, done.returncode, " ".join(said[-2:]))
    deadline = time.monotonic() + float(config["ready_timeout_s"])
    while time.monotonic() < deadline:
        verdict = progress.probe(open_url, config["api_url"], key, config["model"], float(config["first_token_s"]))
        if verdict["state"] == "answering":
            return True, True, "ready again, %s" % verdict["seen"]
        time.sleep(5)
    return True, False, "not ready within %s s of the restart" % config["ready_timeout_s"]


def after_restart(state, now, ran, ok, what):
    """The state after a restart attempt. Only a restart that ran counts (``restarts``, and ``last_restart``, which
    the breaker's window is measured from); one that could not run is a failure of its own (``failed_restarts``,
    ``last_failed_restart``, ``last_failure``), and the next stalls try again."""
    state["stalls"] = 0
    if ran:
        state.update(last_restart=now, restarts=state.get("restarts", 0) + 1, last_restart_ok=ok,
                     last_restart_result=what)
    else:
        state.update(failed_restarts=state.get("failed_restarts", 0) + 1, last_failed_restart=now,
                     last_failure=what)
    return state


def record(path, entry):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


def main(argv):
    with open(argv[1]) as handle:
        config = json.load(handle)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:  # the circuit breaker outlives a restart of this unit
        with open(config["state_file"]) as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        state = {"breaker": "closed", "restarts": 0, "last_restart": None}
    state.update(pid=os.getpid(), stalls=0)
    log("watching %s every %s s (a stall: no first token in %s s and no token counter moving, %s in a row; "
        "restart window %s s)" % (config["api_url"], config["interval_s"], config["first_token_s"], config["stalls"],
                                   config["window_s"]))
    while True:
        key = api_key(config["key_file"])
        verdict = progress.probe(open_url, config["api_url"], key, config["model"], float(config["first_token_s"]))
        now = time.time()
        action = decide(state, verdict, now, config)
        if action == "restart":
            log("STALL: %s; restarting the group (workers, then the head)" % verdict["seen"])
            ran, ok, what = restart(config, key)
            after_restart(state, now, ran, ok, what)
            record(config["records"], {"time": stamp(now), "seen": verdict["seen"], "ran": ran, "ok": ok,
                                       "result": what})
            log("restart %s: %s" % ("done" if ok else "FAILED" if ran else "COULD NOT RUN (not counted; the next "
                                    "stalls try again)", what))
        elif action == "breaker" and state.get("logged_breaker") != state["last_restart"]:
            state["logged_breaker"] = state["last_restart"]
            log("CIRCUIT BREAKER OPEN: %s" % state["reason"])
        elif action == "watch":
            log("stall %d of %s: %s" % (state["stalls"], config["stalls"], verdict["seen"]))
        write_state(config["state_file"], state, config.get("textfile_dir"))
        time.sleep(float(config["interval_s"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
