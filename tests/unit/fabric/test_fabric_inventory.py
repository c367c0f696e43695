"""The fabric stage's firmware and rdma-core inventory: each node's reading from recorded outputs
(tests/fixtures/rdma/SOURCE.md), then the comparison across nodes as the stage runs it - a real ansible-playbook with
the alignment action on local nodes, once with the doctor's callback: a mixed fleet is one warning row per reading,
with its object; a node that read nothing is left out, not counted as agreeing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import dpkg, rdma
from ansible_collections.dgxspark.ds41f.plugins.modules import fabric_inventory
from tests.conftest import FIXTURES, ROOT
from tests.unit.recorded_spark import GB10, GPU_QUERY, NO_GPU, FakeModule, host, outcome

RDMA = FIXTURES / "rdma"
RDMA_CORE = ("dpkg-query", "-W", "-f", dpkg.FORMAT, "rdma-core")
BIN = os.path.dirname(sys.executable)


def recorded_dpkg(name):
    return (0, (RDMA / name).read_text(), "")


def read(tree, dpkg, gpu=GB10, monkeypatch=None):
    node = host(RDMA / tree, {GPU_QUERY: gpu, RDMA_CORE: dpkg})
    return outcome(fabric_inventory, FakeModule({}), node, monkeypatch)


def test_a_spark_reads_one_firmware_for_its_four_hcas_and_its_rdma_core(monkeypatch):
    result = read("fw-spark", recorded_dpkg("dpkg-query-rdma-core-spark.txt"), monkeypatch=monkeypatch)
    inventory = result["ansible_facts"]["ds41f_fabric_inventory"]
    assert (inventory["cx7_firmware"], inventory["rdma_core"]) == ("28.45.4028", "50.0-2ubuntu0.2")
    assert sorted(inventory["hcas"]) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    assert result["changed"] is False and "skipped_checks" not in result


@pytest.mark.parametrize("tree, firmware", [
    ("h200-host", "no RDMA device"),   # recorded: no /sys/class/infiniband at all
    ("gid-slot3", "unreadable"),        # an HCA whose fw_ver cannot be read
])
def test_a_node_without_rdma_core_or_a_readable_firmware_says_so(monkeypatch, tree, firmware):
    inventory = read(tree, (1, "", "dpkg-query: no packages found matching rdma-core\n"),
                     monkeypatch=monkeypatch)["ansible_facts"]["ds41f_fabric_inventory"]
    assert (inventory["rdma_core"], inventory["cx7_firmware"]) == ("not installed", firmware)


def test_off_a_spark_nothing_is_read_and_both_readings_are_not_checked(monkeypatch):
    result = read("fw-spark", None, gpu=NO_GPU, monkeypatch=monkeypatch)
    assert result["ansible_facts"] == {"ds41f_fabric_inventory": None}
    assert result["skipped_checks"] == [{"check": c, "reason": "not a DGX Spark (no GB10 found)"}
                                        for c in ("CX7 firmware", "rdma-core version")]


def test_the_firmware_is_each_hcas_fw_ver():
    assert rdma.firmware(host(RDMA / "fw-cx7-28.43.3608", {})) == {"mlx5_0": "28.43.3608"}


PLAY = """- name: Fabric
  hosts: all
  gather_facts: false
  tasks:
    - name: The audit's reading
      ansible.builtin.set_fact:
        ds41f_fabric_inventory: "{{ reading }}"
    - name: Every node has the same ConnectX-7 firmware and rdma-core
      dgxspark.ds41f.alignment:
        fact: ds41f_fabric_inventory
        keys: [cx7_firmware, rdma_core]
        severity: warn
        unread: skip
      run_once: true
      register: aligned
    - name: Keep what it said
      ansible.builtin.copy:
        content: "{{ aligned | to_json }}"
        dest: "{{ playbook_dir }}/aligned.json"
        mode: "0644"
      run_once: true
"""


def playbook(tmp_path, readings, **env):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n%s" % "".join(
        "    %s: {ansible_connection: local, ansible_python_interpreter: %s, reading: %s}\n" % (
            node, sys.executable, json.dumps(reading)) for node, reading in readings.items()))
    (tmp_path / "p.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "t"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"), **env)
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "hosts.yml", "p.yml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    return proc


@pytest.fixture
def fleet(monkeypatch):
    """Three Sparks as read: two on the Spark's recorded firmware and rdma-core, one whose CX7 firmware and
    rdma-core come from another recorded host (an older ConnectX-7, MLNX_OFED's rdma-core)."""
    same = read("fw-spark", recorded_dpkg("dpkg-query-rdma-core-spark.txt"), monkeypatch=monkeypatch)
    odd = read("fw-cx7-28.43.3608", recorded_dpkg("dpkg-query-rdma-core-mlnx-ofed.txt"), monkeypatch=monkeypatch)
    return {node: result["ansible_facts"]["ds41f_fabric_inventory"]
            for node, result in (("dgx1", same), ("dgx2", same), ("dgx3", odd))}


def test_a_mixed_fleet_warns_with_one_row_per_reading_and_does_not_stop_the_stage(tmp_path, fleet):
    proc = playbook(tmp_path, fleet)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cx7_firmware differs across nodes: '28.45.4028' on dgx1, dgx2; '28.43.3608' on dgx3" in proc.stderr
    report = tmp_path / "report"
    playbook(tmp_path, fleet, ANSIBLE_STDOUT_CALLBACK="dgxspark.ds41f.drift_report",
             ANSIBLE_CALLBACKS_ENABLED="dgxspark.ds41f.drift_report", DS41F_REPORT_DIR=str(report))
    rows = json.loads((report / "doctor.json").read_text())["rows"]
    assert [(r["node"], r["setting"], r["severity"], r["object"]) for r in rows] == [
        ("all", key, "warn", {"node": "all", "kind": "alignment", "name": key})
        for key in ("cx7_firmware", "rdma_core")]
    assert rows[1]["found"] == "'50.0-2ubuntu0.2' on dgx1, dgx2; '2307mlnx47-1.2310119' on dgx3"
    assert "apt-get install rdma-core=" in rows[1]["fix"] and "fwupdmgr" in rows[0]["fix"]


def test_a_node_that_read_nothing_is_left_out_not_counted_as_agreeing(tmp_path, fleet):
    proc = playbook(tmp_path, {"dgx1": fleet["dgx1"], "dgx2": fleet["dgx2"], "lab1": None})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / "aligned.json").read_text())
    assert (result["nodes"], result["unread"], result["findings"]) == (["dgx1", "dgx2"], ["lab1"], [])
    assert result["msg"] == "2 nodes agree on cx7_firmware, rdma_core (ds41f_fabric_inventory not read: lab1)"
