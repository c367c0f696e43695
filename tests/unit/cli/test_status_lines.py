"""`ds41f status`'s lines and verdict from the readings playbooks/day2/status.yml collects."""

import copy

from ansible_collections.dgxspark.ds41f.plugins.module_utils import live_checks
from ds41f.day2 import status

# One worker and the head of a serving 3-node lab, as status.yml reports them (serve-lab, the stock kernel).
WORKER = {
    "rank": 1, "head": False, "address": "172.30.120.12", "kernel": "6.1.0-28-amd64", "page_size": 4096,
    "netdevs": ["enp1s0f0np0", "enP2p1s0f0np0"], "fabric_required": True,
    "links": {"enp1s0f0np0": {"present": True, "operstate": "up", "carrier": True, "mtu": 9000},
              "enP2p1s0f0np0": {"present": True, "operstate": "up", "carrier": True, "mtu": 9000}},
    "pings": [{"netdev": "enp1s0f0np0", "address": "10.12.1.1", "peer": "dgx1", "ok": True},
              {"netdev": "enP2p1s0f0np0", "address": "10.12.2.1", "peer": "dgx1", "ok": True}],
    "memory": {"total_gib": 23.4, "available_gib": 17.9},
    "container": {"status": "running", "running": True, "exit_code": 0, "oom_killed": False, "release": "lab-r1",
                  "spec": "5d1f0c2a9b3e4f60"},
    "spec": "5d1f0c2a9b3e4f60", "release": "lab-r1",
    "guard": {"active": "active", "sub": "running", "state": {"phase": "steady", "threshold_gib": 3}},
    "guard_gib": {"startup": 5, "steady": 3},
    "api": None,
}
HEAD = dict(copy.deepcopy(WORKER), rank=0, head=True, address="172.30.120.11",
            api={"url": "http://172.30.120.11:8000", "ready": True, "models": ["deepseek-v4.1-flash"], "msg": ""})


def test_a_healthy_cluster_is_one_line_per_node_and_the_api():
    lines, problems = status.report([("dgx1", HEAD), ("dgx2", WORKER)])
    assert problems == []
    assert lines[0] == ("dgx1   rank 0  6.1.0-28-amd64, 4 KiB pages  fabric 2/2 paths up  engine running lab-r1  "
                        "guard active steady <3 GiB  free 17.9 GiB (guards 5/3)")
    assert lines[1] == "head API http://172.30.120.11:8000 answering: deepseek-v4.1-flash"
    assert lines[2].startswith("dgx2   rank 1  ")


def test_each_fault_is_named_with_its_fix():
    worker = copy.deepcopy(WORKER)
    worker["links"]["enP2p1s0f0np0"].update(operstate="down", carrier=False)
    worker["pings"][0]["ok"] = False
    worker["container"].update(status="exited", running=False, exit_code=137, oom_killed=False)
    worker["guard"] = {"active": "failed", "state": {"phase": "steady", "threshold_gib": 3, "tripped": True,
                                                     "reason": "MemAvailable 2.10 GiB < 3 GiB"}}
    worker["memory"]["available_gib"] = 2.1
    line, problems = status.node_line("dgx2", worker)
    assert "fabric 0/2 paths up" in line and "engine exited lab-r1 (exit 137)" in line
    assert "guard failed steady <3 GiB TRIPPED" in line and "free 2.1 GiB" in line
    assert problems == [
        "fabric: enp1s0f0np0 no reply from dgx1; enP2p1s0f0np0 down, no carrier. Fix: ds41f run fabric",
        "engine exited (exit 137). Fix: ds41f logs, then ds41f run serve",
        "memory guard tripped: MemAvailable 2.10 GiB < 3 GiB",
        "MemAvailable 2.1 GiB is below the steady guard (3 GiB): the guard kills the engine",
    ]


def test_a_spec_the_recipe_no_longer_renders_and_a_silent_api_are_problems():
    head = copy.deepcopy(HEAD)
    head["spec"] = "0000000000000000"
    head["api"].update(ready=False, models=[], msg="HTTP Error 401: Unauthorized")
    lines, problems = status.report([("dgx1", head)])
    assert "engine running lab-r1 (spec differs)" in lines[0]
    assert lines[1] == "head API http://172.30.120.11:8000 not answering: HTTP Error 401: Unauthorized"
    assert problems[0].startswith("dgx1: engine runs another launch spec than the recipe renders (lab-r1)")
    assert problems[1] == "head API: HTTP Error 401: Unauthorized"


def test_no_engine_and_a_fabric_the_site_does_not_require():
    worker = copy.deepcopy(WORKER)
    worker.update(container=None, fabric_required=False, guard={"active": "inactive", "state": None})
    for link in worker["links"].values():
        link.update(operstate="down", carrier=False)
    line, problems = status.node_line("dgx3", worker)
    assert "fabric 0/2 paths up (not required here)" in line and "engine none" in line and "guard inactive" in line
    assert problems == ["no engine container. Fix: ds41f run serve", "memory guard inactive. Fix: ds41f run serve"]


def test_a_node_that_could_not_be_read_is_a_problem():
    lines, problems = status.report([("dgx1", HEAD)], failed=[("dgx2", "Read the node", "unreachable")])
    assert lines[-1] == "dgx2   not read: Read the node: unreachable"
    assert problems == ["dgx2: not read (unreachable)"]


def test_a_frozen_node_is_a_problem_with_the_console_then_power_cycle_fix_and_the_others_still_read():
    # What ssh says of a paused lab node (podman pause): its keepalives went unanswered, or its banner never came.
    for seen in ("Failed to connect to the host via ssh: Timeout, server 172.30.120.13 not responding.",
                 "Failed to connect to the host via ssh: Connection timed out during banner exchange"):
        lines, problems = status.report([("dgx1", HEAD)], [("dgx3", "Status readings", seen)])
        assert problems[0].startswith("dgx3: connected, no reply (") and "console or BMC" in problems[0]
        assert "power-cycle" in problems[0] and lines[0].startswith("dgx1   rank 0")
    _, problems = status.report([], [("dgx3", "Status readings", "ssh: connect to host x port 22: Connection refused")])
    assert problems == ["dgx3: not read (ssh: connect to host x port 22: Connection refused)"]


def test_a_hung_engine_whose_api_still_answers_is_a_problem_not_all_well():
    head = copy.deepcopy(HEAD)
    head["api"]["progress"] = {"state": "stalled", "ok": False,
                               "seen": "2 request(s) running, no prompt or generated token in 20 s"}
    lines, problems = status.report([("dgx1", head)])
    assert lines[1] == ("head API http://172.30.120.11:8000 answering, engine stalled: 2 request(s) running, no "
                        "prompt or generated token in 20 s")
    assert problems == ["head engine stalled: 2 request(s) running, no prompt or generated token in 20 s. Fix: "
                        + status.STALL_FIX]
    head["api"]["progress"] = {"state": "answering", "ok": True, "seen": "first token in 0.3 s"}
    lines, problems = status.report([("dgx1", head)])
    assert problems == [] and lines[1].endswith("deepseek-v4.1-flash (first token in 0.3 s)")


def test_the_watchdogs_state_is_shown_and_an_open_breaker_is_a_problem():
    head = copy.deepcopy(HEAD)
    head["watchdog"] = {"breaker": "closed", "restarts": 1, "last_restart": 1.0, "last_restart_ok": True}
    lines, problems = status.report([("dgx1", head)])
    assert lines[2] == "watchdog: breaker closed, 1 restart(s)" and problems == []
    head["watchdog"].update(breaker="open", reason="stalled again 120 s after the restart")
    _, problems = status.report([("dgx1", head)])
    assert problems == ["serving watchdog left the group down: stalled again 120 s after the restart"]


def test_a_restart_that_could_not_run_is_shown_and_is_a_problem_until_one_runs():
    head = copy.deepcopy(HEAD)
    why = ("ssh -i /etc/ds41f/serve/watchdog/id_ed25519 ... root@172.30.120.12 docker restart spark-ds41f: exit 255: "
           "Host key verification failed.")
    head["watchdog"] = {"breaker": "closed", "restarts": 0, "last_restart": None, "failed_restarts": 1,
                        "last_failed_restart": 50.0, "last_failure": why, "verdict": "stalled"}
    lines, problems = status.report([("dgx1", head)])
    assert lines[2] == "watchdog: breaker closed, 0 restart(s), 1 could not run"
    assert problems == ["serving watchdog's restart could not run (not counted as a restart): %s. Fix: %s" % (
        why, live_checks.WATCHDOG_ACCESS_FIX)]
    mended = dict(head["watchdog"], verdict="answering")  # serving again, mended by hand: history, not a problem
    assert status.report([("dgx1", dict(head, watchdog=mended))])[1] == []
    head["watchdog"].update(restarts=1, last_restart=60.0, last_restart_ok=True)  # a later restart ran
    lines, problems = status.report([("dgx1", head)])
    assert lines[2] == "watchdog: breaker closed, 1 restart(s), 1 could not run" and problems == []

