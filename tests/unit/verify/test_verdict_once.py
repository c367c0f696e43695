"""The doctor's verdict is computed once, by its last task (doctor_report); the drift_report callback renders what
that task returned. A real ansible-playbook, in check mode, on two local nodes: the same finding twice on dgx2 and
once on dgx1. With the verdict task the table is the task's own (one row per finding, in the verdict's order);
without it (a run that stopped early) the callback shows the rows as found and says they are not folded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = os.path.dirname(sys.executable)
FINDINGS = """- name: Serve
  hosts: dgx2,dgx1
  gather_facts: false
  tasks:
    - name: The marker
      ansible.builtin.copy:
        content: "x"
        dest: "{{ marker }}"
        mode: "0644"
    - name: The marker
      ansible.builtin.copy:
        content: "x"
        dest: "{{ marker }}"
        mode: "0644"
      when: inventory_hostname == 'dgx2'
"""
VERDICT = """
- name: Verdict
  hosts: dgx1,dgx2
  gather_facts: false
  tasks:
    - name: Fail when the drift table holds an error
      dgxspark.ds41f.doctor_report:
      register: verdict
      run_once: true
      ignore_errors: true
    - name: Keep what the verdict task returned
      ansible.builtin.copy:
        content: "{{ verdict | to_json }}"
        dest: "{{ returned }}"
        mode: "0644"
      check_mode: false
      run_once: true
"""


def doctor(tmp_path, play):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n%s" % "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s}\n" % (n, sys.executable)
        for n in ("dgx1", "dgx2")))
    (tmp_path / "p.yml").write_text(play)
    report = tmp_path / "report"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="dgxspark.ds41f.drift_report",
               ANSIBLE_CALLBACKS_ENABLED="dgxspark.ds41f.drift_report", DS41F_REPORT_DIR=str(report))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "hosts.yml", "p.yml", "--check",
                           "-e", "marker=%s" % (tmp_path / "absent" / "marker"),
                           "-e", "returned=%s" % (tmp_path / "returned.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return proc, json.loads((report / "doctor.json").read_text())


def test_the_table_is_what_the_verdict_task_returned(tmp_path):
    proc, doc = doctor(tmp_path, FINDINGS + VERDICT)
    returned = json.loads((tmp_path / "returned.json").read_text())
    assert doc["rows"] == returned["rows"] and doc["counts"] == returned["counts"] == {"error": 2, "warn": 0}
    assert [(r["node"], r["setting"]) for r in doc["rows"]] == [("dgx1", "The marker"), ("dgx2", "The marker")]
    assert returned["failed"] and doc["folded"] is True
    # what the task judged is what the run found, unfolded: dgx2's finding twice
    findings = json.loads((tmp_path / "report" / "findings.json").read_text())
    assert sorted(r["node"] for r in findings["rows"]) == ["dgx1", "dgx2", "dgx2"]


def test_a_run_that_ends_before_its_verdict_shows_the_rows_as_found_and_says_so(tmp_path):
    proc, doc = doctor(tmp_path, FINDINGS)
    assert sorted(r["node"] for r in doc["rows"]) == ["dgx1", "dgx2", "dgx2"]
    assert doc["folded"] is False
    assert not (tmp_path / "report" / "findings.json").exists()
