"""The doctor's callback reads ansible-core's objects through their public names only (Task.get_name, the play's
variables, a task result's host, task and result): here on the objects a real ansible-playbook hands over, through a
callback that records what drift_report's readers find."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = os.path.dirname(sys.executable)

PROBE = '''
import json
from ansible.plugins.callback import CallbackBase
from ansible_collections.dgxspark.ds41f.plugins.callback import drift_report

class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "probe"

    def __init__(self):
        super().__init__()
        self.seen = {"sites": [], "tasks": []}
        self.reader = drift_report.CallbackModule()

    def v2_playbook_on_play_start(self, play):
        self.seen["sites"].append(self.reader._site_of(play))

    def v2_runner_on_ok(self, result):
        self.seen["tasks"].append([result.host.get_name(), drift_report._stage(result.task), result.result.get("msg")])

    def v2_playbook_on_stats(self, stats):
        with open("seen.json", "w") as handle:
            json.dump(self.seen, handle)
'''


def test_the_callback_reads_the_site_and_each_tasks_stage_from_what_ansible_playbook_hands_it(tmp_path):
    (tmp_path / "callback_plugins").mkdir()
    (tmp_path / "callback_plugins" / "probe.py").write_text(PROBE)
    tasks = tmp_path / "roles" / "host_baseline" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text("- name: Sysctls\n  ansible.builtin.debug: {msg: in the role}\n"
                                    "- ansible.builtin.debug: {msg: unnamed}\n")
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    dgx1: {ansible_connection: local, ansible_python_interpreter: %s,\n"
        "           spark_site: {name: lab, nodes: [dgx1]}}\n" % sys.executable)
    (tmp_path / "p.yml").write_text("- name: Host baseline\n  hosts: all\n  gather_facts: false\n"
                                    "  roles: [host_baseline]\n  tasks:\n"
                                    "    - {name: Play task, ansible.builtin.debug: {msg: in the play}}\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_CALLBACKS_ENABLED="probe", ANSIBLE_CALLBACK_PLUGINS=str(tmp_path / "callback_plugins"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "hosts.yml", "p.yml"], cwd=tmp_path,
                          env=env, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["sites"] == [{"name": "lab", "nodes": ["dgx1"]}]
    assert seen["tasks"] == [["dgx1", "host_baseline", "in the role"], ["dgx1", "host_baseline", "unnamed"],
                             ["dgx1", "Host baseline", "in the play"]]
