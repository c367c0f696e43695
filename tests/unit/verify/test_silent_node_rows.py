"""A node that connected but no longer answers (a frozen Spark; `podman pause` in the lab) is one doctor row naming
the node, what was seen and the fix, whether ssh's keepalives, its banner timeout or a task's time limit found it.
The last test runs the real ssh and ansible-playbook against a loopback listener that accepts TCP and says nothing,
as a frozen node's kernel does."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift
from tests.unit.verify.test_doctor_causes import _Result, _Task

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.dirname(sys.executable)
CFG_ARGS = ("-o ControlMaster=auto -o ControlPersist=30m -o PreferredAuthentications=publickey "
            "-o ServerAliveInterval=5 -o ServerAliveCountMax=3")

# What ssh said in the lab for a paused node, and for nodes that are not frozen but absent or refusing.
SILENT = ["Failed to connect to the host via ssh: Timeout, server 172.30.120.13 not responding.",
          "Failed to connect to the host via ssh: Connection timed out during banner exchange\r\nConnection to "
          "172.30.120.13 port 22 timed out",
          "Failed to connect to the host via ssh: Shared connection to 172.30.120.13 closed.",
          "Failed to connect to the host via ssh: mux_client_read_packet: read header failed: Broken pipe"]
NOT_SILENT = ["Failed to connect to the host via ssh: ssh: connect to host 172.30.120.13 port 22: Connection refused",
              "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.9 port 22: No route to host",
              "Failed to connect to the host via ssh: root@10.0.0.9: Permission denied (publickey)."]


def test_the_budget_is_keepalive_interval_times_count_from_ansible_cfg():
    assert drift.keepalive_budget(CFG_ARGS, 10) == 15
    assert drift.keepalive_budget("-o ServerAliveInterval=7", 10) == 21  # ssh's own default count is 3
    assert drift.keepalive_budget("-o ControlMaster=auto", 10) == 10
    assert drift.keepalive_budget("", None) is None
    with open(os.path.join(ROOT, "ansible.cfg")) as cfg:
        assert CFG_ARGS in cfg.read()  # the arguments above are the project's own


@pytest.mark.parametrize("msg", SILENT)
def test_a_silent_node_is_one_row_with_what_was_seen_and_the_console_then_power_cycle_fix(msg):
    r = drift.unreachable_row("dgx3", "The node answers over SSH", {"msg": msg, "unreachable": True}, 15)
    assert r["node"] == "dgx3" and r["severity"] == "error" and r["expected"] == "a reply within 15 s"
    assert r["found"].startswith("connected, no reply in 15 s (")
    assert "console or BMC" in r["fix"] and "power-cycle" in r["fix"]
    assert r["object"] == {"node": "dgx3", "kind": "node", "name": "dgx3"} and "cause" not in r
    assert drift.dedupe([r]) == [r]  # a row of the node as a whole folds what follows from it, not itself


@pytest.mark.parametrize("msg", NOT_SILENT)
def test_a_node_that_refuses_or_is_absent_keeps_the_reachability_row(msg):
    r = drift.unreachable_row("dgx3", "The node answers over SSH", {"msg": msg}, 15)
    assert r["expected"] == "reachable over SSH" and "powered" in r["fix"] and "cause" not in r
    assert r["object"] == {"node": "dgx3", "kind": "node", "name": "dgx3"}


def callback():
    from ansible_collections.dgxspark.ds41f.plugins.callback.drift_report import CallbackModule

    cb = CallbackModule()
    cb._display = type("D", (), {"display": lambda *a, **k: None, "warning": lambda *a, **k: None})()
    return cb


def test_a_task_past_its_time_limit_is_the_silent_row_and_the_stages_later_failures_echo_it():
    cb = callback()
    cb.v2_runner_on_failed(_Result("dgx2", _Task("Read the node", "serve"), {
        "msg": "Timed out after 120 seconds.", "timedout": {"period": 120}}), True)
    cb.v2_runner_on_failed(_Result("dgx2", _Task("Serve preflight", "serve"), {"msg": "no reading"}), True)
    assert [(r["node"], r["found"]) for r in cb.rows] == [
        ("dgx2", "connected, no reply in 120 s (task time limit of 120 s)")]
    assert cb.skipped == [{"node": "dgx2", "check": "serve: Serve preflight",
                           "reason": "after the node stopped answering"}]


def test_the_callback_names_the_budget_it_runs_with():
    cb = callback()
    cb.v2_runner_on_unreachable(_Result("dgx3", _Task("The node answers over SSH", "doctor"), {"msg": SILENT[0]}))
    assert cb.rows[0]["found"].startswith("connected, no reply in ")


@pytest.fixture
def frozen_port():
    """A loopback port that accepts connections and never sends a byte (a frozen node's kernel, its sshd stopped)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in held:
        conn.close()


def test_a_frozen_and_a_live_node_the_run_names_the_frozen_one_in_bounded_time_and_reads_the_other(
        tmp_path, frozen_port):
    """The real reach play with the project's ansible.cfg: the live node (local connection) answers, the frozen one
    is unreachable within the connection timeout; a converging run stops, check mode goes on."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "spark_cluster:\n  hosts:\n    live: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "    frozen: {ansible_host: 127.0.0.1, ansible_port: %d, ansible_user: nobody}\n" % (sys.executable,
                                                                                          frozen_port))
    playbook = tmp_path / "p.yml"
    stage = ("- ansible.builtin.import_playbook: %s/playbooks/common/reach.yml\n"
             "- hosts: spark_cluster\n  gather_facts: false\n  tasks:\n"
             "    - ansible.builtin.debug: {msg: read}\n" % ROOT)
    playbook.write_text(stage * 2)  # two stages, as site.yml imports them: the silent node costs its wait once
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / "cp"), ANSIBLE_NOCOLOR="1", ANSIBLE_TIMEOUT="3",
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"))
    for check, rc in (([], 4), (["--check"], 4)):  # 4: a host was unreachable
        start = time.monotonic()
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), str(playbook), *check],
                              cwd=tmp_path, env=env, text=True, capture_output=True, timeout=120)
        out = proc.stdout + proc.stderr
        assert time.monotonic() - start < 60, out
        assert proc.returncode == rc, out
        assert out.count("UNREACHABLE!") == 1 and "banner exchange" in out
        if check:  # check mode (the doctor) reads the node that answered
            assert 'ok: [live] => {\n    "msg": "read"' in out, out
        else:  # a converging run stops before its first change, naming the node
            assert "frozen did not answer" in out and "nothing was changed" in out and '"msg": "read"' not in out
