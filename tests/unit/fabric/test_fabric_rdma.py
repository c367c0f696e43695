"""GID table, port state and link speed readers, from sysfs trees and ethtool outputs under tests/fixtures/rdma."""

import re

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import rdma
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

RDMA = FIXTURES / "rdma"


def recorded(name):
    """A runner that answers every command with a recorded output file."""
    text = (RDMA / name).read_text()
    return lambda argv: (0, text, "")


def test_the_gid_table_lists_populated_slots_with_type_and_mapped_ipv4():
    table = rdma.gid_table(Host(str(RDMA / "gid-slot3")), "rocep1s0f0")
    assert [(e["index"], e["type"]) for e in table] == [(0, "IB/RoCE v1"), (1, "RoCE v2"), (2, "IB/RoCE v1"),
                                                         (3, "RoCE v2")]  # slot 4 is all zeros: unused
    assert table[0]["gid"] == "fe80::ac0:ebff:feda:1cfb" and table[0]["ipv4"] is None
    assert table[3]["gid"] == "::ffff:200.0.209.6" and table[3]["ipv4"] == "200.0.209.6"  # on every Python
    assert table[3]["ndev"] == "enp1s0f0np0"


def test_the_ipv4_roce_v2_slot_is_found_where_it_is():
    assert rdma.roce_v2_index(rdma.gid_table(Host(str(RDMA / "gid-slot3")), "rocep1s0f0"), "200.0.209.6") == 3
    moved = rdma.gid_table(Host(str(RDMA / "gid-moved")), "rocep1s0f0")
    assert rdma.roce_v2_index(moved, "200.0.209.6") == 4
    assert rdma.roce_v2_index(moved, "10.12.1.1") is None


def test_a_missing_hca_reads_as_an_empty_table():
    host = Host(str(RDMA / "gid-slot3"))
    assert rdma.gid_table(host, "roceP2p1s0f1") == []
    assert not rdma.has_hca(host, "roceP2p1s0f1") and rdma.has_hca(host, "rocep1s0f0")


def test_port_state_is_the_word_after_the_number():
    assert rdma.port_state(Host(str(RDMA / "gid-slot3")), "rocep1s0f0") == "ACTIVE"
    assert rdma.port_state(Host(str(RDMA / "gid-slot3")), "roceP2p1s0f1") is None


def test_link_speed_from_sysfs():
    host = Host(str(RDMA / "speed"), lambda argv: (1, "", "no ethtool expected"))
    assert rdma.link_speed(host, "enp1s0f1np1") == 200000
    assert rdma.link_speed(host, "enP2p1s0f1np1") == 100000
    assert rdma.link_speed(host, "enp1s0f0np0") is None  # -1: no link


def test_link_speed_from_ethtool_when_sysfs_does_not_answer():
    assert rdma.link_speed(Host("/", recorded("ethtool-spark-200g.txt")), "enp1s0f1np1") == 200000
    assert rdma.link_speed(Host("/", recorded("ethtool-spark-100g.txt")), "enp1s0f1np1") == 100000


def test_no_link_and_a_failing_ethtool_read_as_unknown():
    assert rdma.link_speed(Host("/", recorded("ethtool-no-link.txt")), "lan12") is None
    assert rdma.link_speed(Host("/", lambda argv: (71, "", "Cannot get device settings")), "enp1s0f0np0") is None


def test_a_lab_veth_reports_a_speed_that_says_nothing_about_a_cx7_port():
    # Parsed all the same; the check itself skips speed on anything that is not a DGX Spark.
    assert rdma.link_speed(Host("/", recorded("ethtool-lab-veth.txt")), "enp1s0f0np0") == 10000


def test_a_recorded_spark_ethtool_of_the_f0_port_reads_200g():
    # Published with spaces where ethtool prints a tab; the reader takes either.
    assert rdma.link_speed(Host("/", recorded("ethtool-spark-f0-200g-link.txt")), "enp1s0f0np0") == 200000


def _ibdev2netdev(name):
    lines = (RDMA / name).read_text().splitlines()
    return {m.group(1): (m.group(2), m.group(3)) for m in
            (re.match(r"^(\S+) port 1 ==> (\S+) \((\w+)\)$", line) for line in lines) if m}


def test_recorded_spark_hca_and_netdev_names_are_the_ones_the_topology_uses():
    expected = {topology.port_hca(p, q): topology.port_netdev(p, q)
                for p in topology.PORTS for q in topology.PCIE_PATHS}
    for name in ("ibdev2netdev-spark-f1-up.txt", "ibdev2netdev-spark-f0-up.txt"):
        recorded_pairs = {hca: netdev for hca, (netdev, _) in _ibdev2netdev(name).items()}
        assert recorded_pairs == expected, name
    # One cable on port 1: both PCIe paths of that port are up, the other port's are down.
    states = {hca: state for hca, (_, state) in _ibdev2netdev("ibdev2netdev-spark-f1-up.txt").items()}
    assert [h for h, s in sorted(states.items()) if s == "Up"] == [topology.port_hca(1, 2), topology.port_hca(1, 1)]


def test_recorded_spark_ibv_devinfo_agrees_with_ibdev2netdev_on_the_same_node():
    text = (RDMA / "ibv_devinfo-spark-f1-up.txt").read_text()
    active = dict(re.findall(r"^hca_id:\t(\S+)\n(?:\t.*\n)*?\t\t\tstate:\t+(\w+)", text, re.M))
    assert set(active) == {topology.port_hca(p, q) for p in topology.PORTS for q in topology.PCIE_PATHS}
    up = {hca for hca, (_, state) in _ibdev2netdev("ibdev2netdev-spark-f1-up.txt").items() if state == "Up"}
    assert {hca for hca, state in active.items() if state == "PORT_ACTIVE"} == up
