"""ds41f memory guard: kill the engine container before the host runs out of memory.

Run by ds41f-memguard.service (dgxspark.ds41f serve stage) with a JSON config:
    {"container": "spark-ds41f", "phase": "startup", "threshold_gib": 5, "interval_s": 0.25,
     "state_file": "/run/ds41f/memguard.json", "textfile_dir": "/var/lib/prometheus/node-exporter"}

Every interval it reads MemAvailable from /proc/meminfo and writes the sample to the state file (the serve
stage starts the engine only after the first sample). Below the threshold it logs why, kills the container
with SIGKILL and exits 1, so the unit shows failed until the next start re-arms it. Fail-closed: a
/proc/meminfo it cannot read is treated as a breach. With ``textfile_dir`` the same state goes to node_exporter's
textfile folder as ds41f_memguard.prom (through ds41f_textfile.py beside this program).
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import ds41f_textfile as textfile  # installed beside this program (plugins/module_utils/textfile.py)
except ImportError:  # an older install without it: the guard guards, it writes no metrics
    textfile = None

GIB = 1024 ** 3


def mem_available(text):
    """MemAvailable in bytes from /proc/meminfo text, or None."""
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None


def write_state(path, state, textfile_dir=None):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle, sort_keys=True)
    os.replace(tmp, path)
    if textfile_dir and textfile is not None:
        textfile.write(textfile_dir, "ds41f_memguard.prom", textfile.render(textfile.memguard_metrics(state)))


def log(message):
    print(message, flush=True)


def trip(config, state, reason):
    name = config["container"]
    log("TRIP (%s guard, %s): %s; killing container %s" % (state["phase"], config["threshold_gib"], reason, name))
    proc = subprocess.run(["docker", "kill", "--signal", "KILL", name], capture_output=True, text=True)
    if proc.returncode == 0:
        log("killed container %s" % name)
    else:
        log("docker kill %s: %s" % (name, (proc.stderr or proc.stdout).strip() or "exit %d" % proc.returncode))
    state.update(tripped=True, reason=reason, killed=proc.returncode == 0, time=time.time())
    write_state(config["state_file"], state, config.get("textfile_dir"))
    return 1


def main(argv):
    with open(argv[1]) as handle:
        config = json.load(handle)
    threshold = float(config["threshold_gib"]) * GIB
    interval = float(config["interval_s"])
    os.makedirs(os.path.dirname(config["state_file"]), exist_ok=True)
    state = {"phase": config["phase"], "threshold_gib": config["threshold_gib"], "container": config["container"],
             "pid": os.getpid(), "armed": time.time(), "samples": 0, "tripped": False, "lowest_gib": None}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log("armed: %s phase, kill %s below %s GiB MemAvailable, every %s s" % (
        config["phase"], config["container"], config["threshold_gib"], interval))
    while True:
        try:
            with open(config.get("meminfo", "/proc/meminfo")) as handle:
                available = mem_available(handle.read())
        except OSError:
            available = None
        if available is None:
            return trip(config, state, "cannot read MemAvailable from %s" % config.get("meminfo", "/proc/meminfo"))
        gib = round(available / GIB, 3)
        state.update(samples=state["samples"] + 1, mem_available_gib=gib, time=time.time(),
                     lowest_gib=gib if state["lowest_gib"] is None else min(gib, state["lowest_gib"]))
        if available < threshold:
            return trip(config, state, "MemAvailable %.2f GiB < %s GiB" % (gib, config["threshold_gib"]))
        write_state(config["state_file"], state, config.get("textfile_dir"))
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
