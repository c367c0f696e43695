"""The memory guard program (roles/serve/files/ds41f-memguard.py) run for real against meminfo files."""

import json
import subprocess
import sys
import time

from .conftest import ROOT

GUARD = ROOT / "roles" / "serve" / "files" / "ds41f-memguard.py"
MEMINFO = "MemTotal:       24684088 kB\nMemFree:         1234567 kB\nMemAvailable:    %d kB\n"


def run_guard(tmp_path, available_kb, threshold_gib, meminfo=None):
    info = tmp_path / "meminfo"
    if available_kb is not None:
        info.write_text(MEMINFO % available_kb)
    config = {"container": "ds41f-test-no-such-container", "phase": "steady", "threshold_gib": threshold_gib,
              "interval_s": 0.05, "state_file": str(tmp_path / "run" / "state.json"),
              "meminfo": str(meminfo or info)}
    (tmp_path / "guard.json").write_text(json.dumps(config))
    # The guard runs until it trips: wait for it to exit, or to have sampled twice (then stop it, rc None). The
    # deadline only bounds a hang; on a loaded machine Python's start alone may take seconds.
    state_file = tmp_path / "run" / "state.json"
    proc = subprocess.Popen([sys.executable, str(GUARD), str(tmp_path / "guard.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    rc = None
    while time.monotonic() < deadline:
        rc = proc.poll()
        if rc is not None:
            break
        try:
            if json.loads(state_file.read_text()).get("samples", 0) >= 2:
                break
        except (OSError, ValueError):  # not written yet, or caught mid-write
            pass
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("the guard neither exited nor sampled twice in 60 s")
    if rc is None:
        proc.terminate()
    out = proc.communicate(timeout=30)[0]
    return rc, out, json.loads(state_file.read_text())


def test_below_the_threshold_it_kills_and_fails(tmp_path):
    rc, out, state = run_guard(tmp_path, 2 * 1024 * 1024, 3)  # 2 GiB free, 3 GiB guard
    assert rc == 1
    assert "TRIP (steady guard, 3): MemAvailable 2.00 GiB < 3 GiB; killing container ds41f-test-no-such-container" \
        in out
    assert state["tripped"] is True and state["samples"] == 1 and state["mem_available_gib"] == 2.0


def test_above_the_threshold_it_keeps_sampling(tmp_path):
    rc, out, state = run_guard(tmp_path, 8 * 1024 * 1024, 3)
    assert rc is None  # still running when the test stopped it
    assert "armed: steady phase, kill ds41f-test-no-such-container below 3 GiB" in out
    assert state["tripped"] is False and state["samples"] >= 2 and state["lowest_gib"] == 8.0


def test_fail_closed_without_a_reading(tmp_path):
    rc, out, state = run_guard(tmp_path, None, 3, meminfo=tmp_path / "missing")
    assert rc == 1 and "cannot read MemAvailable" in out and state["tripped"] is True
