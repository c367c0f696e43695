"""A check a stage cannot make (the build node's Docker down: no image ID to compare with) is said where a person
reads it: printed in a run, and listed under "not checked" in the doctor's report. A real ansible-playbook runs the
not_checked action on two local nodes, once with the default callback and once with the doctor's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = os.path.dirname(sys.executable)
PLAY = """- name: Image
  hosts: all
  gather_facts: false
  tasks:
    - name: Not checked - every node's image
      dgxspark.ds41f.not_checked:
        nodes: "{{ ansible_play_hosts }}"
        check: image ds41f-lab:lab-1
        reason: dgx1's Docker did not answer (its row)
      run_once: true
"""


def playbook(tmp_path, **env):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n%s" % "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (n, sys.executable)
        for n in ("dgx1", "dgx2")))
    (tmp_path / "p.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), **env)
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "hosts.yml", "p.yml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_run_prints_it_and_the_doctor_lists_it_for_every_node(tmp_path):
    out = playbook(tmp_path)
    assert "image ds41f-lab:lab-1 not checked on dgx1, dgx2: dgx1's Docker did not answer (its row)" in out
    report = tmp_path / "report"
    playbook(tmp_path, ANSIBLE_STDOUT_CALLBACK="dgxspark.ds41f.drift_report",
             ANSIBLE_CALLBACKS_ENABLED="dgxspark.ds41f.drift_report", DS41F_REPORT_DIR=str(report))
    doc = json.loads((report / "doctor.json").read_text())
    assert doc["rows"] == []
    assert doc["not_checked"] == [{"node": n, "check": "image ds41f-lab:lab-1",
                                   "reason": "dgx1's Docker did not answer (its row)"} for n in ("dgx1", "dgx2")]
