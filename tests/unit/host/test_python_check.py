"""The host baseline's first task reads the reach gate's answer (python3=, requests=): a node that has both passes it
without a task run (it is skipped), one that lacks either fails naming what to install, and a run without the gate
says to run the stage playbook. The task is run as the role writes it, on localhost, with the answer given."""

import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT

BIN = sys.executable.rsplit("/", 1)[0]
TASKS = ROOT / "roles" / "host_baseline" / "tasks" / "main.yml"


def run_check(tmp_path, answer):
    task = yaml.safe_load(TASKS.read_text())[0]
    assert task["name"] == "The node has python3 and requests"
    tasks = ([{"name": "The reach gate's answer", "ansible.builtin.set_fact": {"ds41f_reach_answer": {
        "stdout": answer}}}] if answer is not None else []) + [task, {
            "name": "After the check", "ansible.builtin.debug": {"msg": "past the check"}}]
    play = tmp_path / "check.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "connection": "local",
                                     "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_DISPLAY_SKIPPED_HOSTS="true")
    proc = subprocess.run([BIN + "/ansible-playbook", "-i", "localhost,", str(play)], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_a_node_with_python3_and_requests_skips_the_check(tmp_path):
    rc, out = run_check(tmp_path, "python3=yes\nrequests=yes\n")
    assert rc == 0 and "past the check" in out, out
    assert "skipping: [localhost]" in out


@pytest.mark.parametrize("answer,lacks", [
    ("python3=no\nrequests=no\n", "lacks python3 and requests"),
    ("python3=yes\nrequests=no\n", "lacks requests."),
])
def test_a_node_that_lacks_either_fails_naming_what_to_install(tmp_path, answer, lacks):
    rc, out = run_check(tmp_path, answer)
    assert rc != 0 and "past the check" not in out
    assert lacks in out and "Fix: apt-get install python3 python3-requests" in out, out


def test_a_run_without_the_reach_gate_names_the_stage_playbook(tmp_path):
    rc, out = run_check(tmp_path, None)
    assert rc != 0 and "the reach gate (playbooks/common/reach.yml) did not read it" in out, out
