"""ds41f checkpoint scrub: hash every file of this node's checkpoint in full against the model stage's manifest.

    ds41f-model-scrub.py CONFIG [--due] [--budget SECONDS]

Installed by the dgxspark.ds41f model stage with its config (JSON):
    {"path": "<model_dir>", "manifest": "<model_dir>.manifest.json", "manifest_digest": "...",
     "record": "<model_dir>.verified.json", "state_file": "/var/lib/ds41f/model/scrub.json",
     "textfile_dir": "/var/lib/prometheus/node-exporter", "period_s": 604800, "timeout_s": 21600}

ds41f-model-scrub.timer starts ds41f-model-scrub.service every hour, which runs this with --due: it scrubs only when
the last scrub of this checkpoint started a period ago or more (or never ran), so reboots do not reset the period.
`ds41f doctor --deep` runs it without --due (now), with its own budget. One scrub at a time: a timer's run finds
another one running and leaves; a run asked for now waits for it and takes its result.

At the lowest priority (nice 19, SCHED_IDLE, the idle I/O class; the unit sets the same), on one thread, each chunk
dropped from the page cache once hashed (plugins/module_utils/scrub.py, beside this as ds41f_scrub.py). It stops
itself before its budget (--budget, else timeout_s) runs out, recording how far it got. The result goes to
state_file (read by the model stage's check and the doctor) and to ds41f_model_scrub.prom in textfile_dir.
Exit 0 when it scrubbed, or had nothing to do; 1 when it could not scrub (no usable config or manifest).
"""

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ds41f_manifest as manifest  # noqa: E402  (installed beside this program: plugins/module_utils/manifest.py)
import ds41f_scrub as scrub  # noqa: E402  (the same: plugins/module_utils/scrub.py)
import ds41f_textfile as textfile  # noqa: E402  (the same: plugins/module_utils/textfile.py)

STOP = {"signal": None}


def log(message):
    print(message, flush=True)


def lowest_priority():
    """nice 19, SCHED_IDLE and the idle I/O class for this process, however it was started."""
    os.nice(19)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as exc:
        log("CPU scheduling left as it was: %s" % exc)
    try:
        subprocess.run(["ionice", "-c", "3", "-p", str(os.getpid())], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        log("I/O priority left as it was (ionice: %s)" % exc)


def lock(path, wait_s):
    """The scrub's lock (a file beside the state), held until exit; None when another scrub held it for ``wait_s``."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    handle = open(path + ".lock", "a")  # noqa: SIM115  (held open: the lock lasts as long as the file is open)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                return None
            time.sleep(1)


def record_result(config, state):
    scrub.write(config["state_file"], state)
    if config.get("textfile_dir"):
        textfile.write(config["textfile_dir"], "ds41f_model_scrub.prom",
                       textfile.render(textfile.model_scrub_metrics(state)))


def usable_manifest(config):
    """The manifest copy beside the checkpoint, or the reason it cannot be the reference."""
    data = manifest.load_json(config["manifest"])
    if data is None:
        return None, "no readable manifest at %s (the model stage keeps it there; ds41f run model)" % config["manifest"]
    problems = manifest.validate(data)
    if problems:
        return None, "the manifest at %s is unusable: %s" % (config["manifest"], "; ".join(problems))
    if data["digest"] != config["manifest_digest"]:
        return None, "the manifest at %s (%s) is not the one the model stage installed (%s)" % (
            config["manifest"], data["digest"][:16], config["manifest_digest"][:16])
    return data, None


def main(argv=None):
    ap = argparse.ArgumentParser(description="hash every file of the checkpoint in full")
    ap.add_argument("config")
    ap.add_argument("--due", action="store_true", help="scrub only when a period passed since the last scrub")
    ap.add_argument("--budget", type=float, help="seconds this run may take (default: the config's timeout_s)")
    args = ap.parse_args(argv)
    with open(args.config) as handle:
        config = json.load(handle)
    budget = float(args.budget or config["timeout_s"])
    asked = time.time()
    stop_at = time.monotonic() + budget - min(60.0, budget / 10)  # room to write the result before the unit's end
    signal.signal(signal.SIGTERM, lambda signum, frame: STOP.update(signal="SIGTERM"))
    held = lock(config["state_file"], 0 if args.due else budget / 2)
    if held is None:
        log("another scrub is running%s" % ("; nothing to do" if args.due else " past half this run's budget"))
        return 0
    state = scrub.load(config["state_file"])
    if not args.due and isinstance(state, dict) and (state.get("finished") or 0) >= asked:
        log("the scrub that was running finished: %s" % scrub.summary(state))
        return 0
    if args.due and not scrub.due(state, config["manifest_digest"], config["path"], time.time(),
                                  float(config["period_s"])):
        log("not due: the last scrub started %s, the period is %d s" % (scrub.stamp(state["started"]),
                                                                        float(config["period_s"])))
        return 0
    lowest_priority()
    reference, why = usable_manifest(config)
    if reference is None:
        state = scrub.failed(config["path"], config["manifest_digest"], why)
        record_result(config, state)
        log("cannot scrub: %s" % why)
        return 1
    log("scrubbing %d files (%.1f GiB) under %s, budget %d s" % (len(reference["files"]),
                                                              reference["total_bytes"] / 2.0 ** 30, config["path"],
                                                              budget))
    state = scrub.scrub(config["path"], reference, manifest.load_json(config["record"]),
                        stop=lambda: STOP["signal"] is not None or time.monotonic() >= stop_at, budget_s=budget)
    if STOP["signal"] and not state["complete"]:
        state["reason"] = "%s (%s: the unit's TimeoutStartSec, or systemctl stop)" % (state["reason"], STOP["signal"])
    record_result(config, state)
    for bad in state["bad"]:
        log("BAD %s: %s" % (bad["path"], scrub.describe(bad)))
    log(scrub.summary(state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
