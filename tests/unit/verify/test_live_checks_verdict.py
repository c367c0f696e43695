"""The verify stage's verdict is doctor_checks' own: a converging run fails on an error finding, listing it with its
fix; the doctor (fail_on_error off) gets the findings and no failure. Run through ansible-playbook on the ring4
example site, every node local (nothing is contacted), with readings shaped like live_state's."""

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology
from tests.conftest import ROOT

BIN = os.path.dirname(sys.executable)
SITE = ROOT / "inventories" / "ring4" / "ring4.spark.yml"

PLAY = """
- hosts: spark_cluster
  gather_facts: false
  connection: local
  tasks:
    - ansible.builtin.set_fact:
        verify_live: "{{ (lookup('file', readings) | from_json)[inventory_hostname] }}"
    - dgxspark.ds41f.doctor_checks:
        live: verify_live
        fail_on_error: "{{ fail | bool }}"
      run_once: true
      register: checked
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{ checked | to_json }}"
        dest: "{{ out }}"
      delegate_to: localhost
      run_once: true
"""


def readings(mtu_on_dgx2):
    import yaml

    cluster = topology.build(yaml.safe_load(SITE.read_text()))
    hosts = {}
    for node in cluster.nodes:
        links = {link["netdev"]: {"present": True, "operstate": "up", "carrier": True,
                                  "mtu": mtu_on_dgx2 if node.name == "dgx2" else 9000,
                                  "addresses": ["%s/%d" % (link["address"], link["prefix"])]}
                 for link in cluster.links(node.name)}
        pings = [{"netdev": link["netdev"], "address": link["peer_address"], "ok": True}
                 for link in cluster.links(node.name)]
        hosts[node.name] = {"live": {"links": links, "pings": pings, "memory": {"available_gib": 90.0},
                                     "gpus": None, "container": None, "launch_spec": None}}
    return hosts


@pytest.mark.parametrize("mtu, fail, failed", [(1500, True, True), (1500, False, False), (9000, True, False)])
def test_an_error_fails_a_converging_run_only(tmp_path, mtu, fail, failed):
    (tmp_path / "readings.json").write_text(json.dumps(readings(mtu)))
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(SITE), str(tmp_path / "play.yml"),
                           "-e", "readings=%s out=%s fail=%s" % (tmp_path / "readings.json", tmp_path / "out.json",
                                                                  fail)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "out.json").read_text())
    assert bool(result.get("failed")) is failed
    if failed:  # each error on a line of its own, with its fix
        head, *lines = result["msg"].split("\n")
        assert head == "%d error(s):" % len(lines) and lines
        assert all(line.startswith("- dgx2 ") and "mtu" in line and "Fix: " in line for line in lines), lines
    elif mtu == 9000:
        assert result["msg"].startswith("live checks: no errors") and result["findings"] == []
    else:
        assert {f["node"] for f in result["findings"] if f["severity"] == "error"} == {"dgx2"}
