"""The memory_guard module, the serve stage's one call that arms a node's memory guard: its config, its unit
(re)started, its first sample waited for. It runs as Ansible runs it on a node; systemctl is a small script that
logs its calls and, on a restart, writes the state file as the guard program does (unless told the guard dies)."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.unit.host.test_single_call_modules import program, run

CONFIG = json.dumps({"phase": "steady", "threshold_gib": 3.0}, indent=4, sort_keys=True) + "\n"


@pytest.fixture
def node(tmp_path):
    """(args, calls file, active file): systemctl answering is-active from a file, a restart writing a sample."""
    bin_dir, calls, active, state = tmp_path / "bin", tmp_path / "calls", tmp_path / "active", tmp_path / "state.json"
    active.write_text("active\n")
    program(bin_dir, "systemctl", (
        'echo "$@" >> {calls}\n'
        'case "$1" in\n'
        '  is-active) cat {active}; grep -q "^active" {active} ;;\n'
        '  show) cat {shown} ;;\n'
        '  restart) [ -e {dead} ] && exit 0; echo active > {active};\n'
        '    printf \'{{"armed": %s, "samples": 1}}\' "$(date +%s)" > {state} ;;\n'
        'esac\n').format(calls=calls, active=active, state=state, dead=tmp_path / "dead", shown=tmp_path / "shown"))
    started(tmp_path)
    args = {"path": str(tmp_path / "etc" / "memguard.json"), "content": CONFIG, "unit": "ds41f-memguard.service",
            "state_file": str(state), "wait": 3}
    return tmp_path, bin_dir, args, calls, active


def started(tmp_path, reload="no"):
    """systemctl show's answer: the unit started now (on the monotonic clock systemd keeps)."""
    (tmp_path / "shown").write_text("NeedDaemonReload=%s\nActiveEnterTimestampMonotonic=%d\n" % (
        reload, time.monotonic() * 1e6))


def test_a_missing_config_is_a_drift_row_in_check_mode_and_nothing_is_written_or_restarted(node):
    tmp_path, bin_dir, args, calls, _ = node
    checked = run(tmp_path, "memory_guard", args, check_mode=True, path=bin_dir)
    assert checked["changed"] and not checked["armed"]
    assert [row["setting"] for row in checked["drift"]] == [args["path"]]
    assert checked["drift"][0]["found"] is None and checked["drift"][0]["expected"] == CONFIG
    assert not (tmp_path / "etc").exists()
    assert calls.read_text() == "is-active ds41f-memguard.service\n"
    assert {"kind": "unit", "name": "ds41f-memguard.service", "policy": "running"} in checked["managed"]


def test_a_written_config_restarts_the_guard_and_waits_for_its_sample_then_nothing_is_left_to_do(node):
    tmp_path, bin_dir, args, calls, _ = node
    done = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert done["changed"] and done["armed"], done
    assert done["actions"] == ["write %s" % args["path"], "restart ds41f-memguard.service"]
    assert (tmp_path / "etc" / "memguard.json").read_text() == CONFIG
    assert oct((tmp_path / "etc" / "memguard.json").stat().st_mode & 0o777) == "0o644"
    assert calls.read_text().splitlines()[1:] == ["daemon-reload", "restart ds41f-memguard.service"]
    calls.write_text("")
    again = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert not again["changed"] and not again["armed"] and again["drift"] == []
    assert calls.read_text().splitlines() == ["is-active ds41f-memguard.service",
                                              "show -p NeedDaemonReload -p ActiveEnterTimestampMonotonic "
                                              "ds41f-memguard.service"]


def test_an_inactive_guard_is_started_and_rearm_restarts_an_active_one(node):
    tmp_path, bin_dir, args, calls, active = node
    run(tmp_path, "memory_guard", args, path=bin_dir)
    active.write_text("failed\n")
    checked = run(tmp_path, "memory_guard", args, check_mode=True, path=bin_dir)
    assert not checked["changed"] and checked["active"] == "failed"  # the live checks' row names it, not this
    started = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert started["changed"] and started["armed"] and started["actions"] == ["restart ds41f-memguard.service"]
    rearmed = run(tmp_path, "memory_guard", dict(args, rearm=True), path=bin_dir)
    assert rearmed["changed"] and rearmed["armed"] and rearmed["active"] == "active"


def test_a_guard_that_writes_no_sample_fails_naming_its_unit_and_the_journal(node):
    tmp_path, bin_dir, args, _, _ = node
    (tmp_path / "dead").write_text("")
    failed = run(tmp_path, "memory_guard", dict(args, wait=1), path=bin_dir)
    assert failed["failed"] and failed["armed"]
    assert "ds41f-memguard.service: no sample" in failed["msg"] and "journalctl --unit ds41f-memguard" in failed["msg"]


def test_an_old_sample_of_an_earlier_start_does_not_count(node):
    tmp_path, bin_dir, args, _, _ = node
    (tmp_path / "dead").write_text("")
    (tmp_path / "state.json").write_text(json.dumps({"armed": 1000, "samples": 40}))
    failed = run(tmp_path, "memory_guard", dict(args, wait=1, rearm=True), path=bin_dir)
    assert failed["failed"] and "no sample" in failed["msg"]


def test_a_guard_older_than_a_file_it_runs_restarts_whichever_run_wrote_it_and_check_mode_only_reads(node):
    tmp_path, bin_dir, args, calls, _ = node
    program = tmp_path / "ds41f-memguard.py"
    args = dict(args, restart_after=[str(program), str(tmp_path / "never-written.py")])
    run(tmp_path, "memory_guard", args, path=bin_dir)
    started(tmp_path)
    time.sleep(0.05)
    program.write_text("# a newer guard\n")  # written by a run cut off before its restart
    checked = run(tmp_path, "memory_guard", args, check_mode=True, path=bin_dir)
    assert not checked["changed"] and checked["drift"] == [] and not checked["armed"]
    done = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert done["armed"] and done["actions"] == [
        "restart ds41f-memguard.service (%s was written after it started)" % program]
    started(tmp_path)
    again = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert not again["changed"] and not again["armed"]


def test_a_unit_file_systemd_has_not_reloaded_restarts_the_guard_after_a_daemon_reload(node):
    tmp_path, bin_dir, args, calls, _ = node
    run(tmp_path, "memory_guard", args, path=bin_dir)
    started(tmp_path, reload="yes")
    calls.write_text("")
    done = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert done["actions"] == ["restart ds41f-memguard.service (its unit file changed on disk)"]
    assert calls.read_text().splitlines()[-2:] == ["daemon-reload", "restart ds41f-memguard.service"]


def test_a_file_written_before_the_start_leaves_the_guard_alone(node):
    tmp_path, bin_dir, args, _, _ = node
    program = tmp_path / "ds41f-memguard.py"
    program.write_text("# the guard\n")
    old = time.time() - 60
    os.utime(program, (old, old))
    run(tmp_path, "memory_guard", dict(args, restart_after=[str(program)]), path=bin_dir)
    again = run(tmp_path, "memory_guard", dict(args, restart_after=[str(program)]), path=bin_dir)
    assert not again["changed"] and not again["armed"]


def test_a_start_time_systemd_does_not_give_restarts_nothing(node):
    tmp_path, bin_dir, args, _, _ = node
    program = tmp_path / "ds41f-memguard.py"
    program.write_text("# the guard\n")
    args = dict(args, restart_after=[str(program)])
    run(tmp_path, "memory_guard", args, path=bin_dir)
    (tmp_path / "shown").write_text("NeedDaemonReload=no\n")
    again = run(tmp_path, "memory_guard", args, path=bin_dir)
    assert not again["changed"] and not again["armed"]
