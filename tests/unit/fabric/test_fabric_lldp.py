"""LLDP neighbours read from lldpctl (recorded in the lab), compared with the site, turned into a suggested site."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import lldp, topology
from tests.conftest import FIXTURES

RDMA = FIXTURES / "rdma"


def test_each_port_gets_its_freshest_neighbour_after_a_cable_moved():
    # dgx2 right after its two ports' plugs were swapped: lldpd still lists the old neighbour of port 0.
    found = lldp.parse((RDMA / "lldpctl-keyvalue-after-swap.txt").read_text())
    assert found["enp1s0f0np0"]["name"] == "dgx1" and found["enp1s0f0np0"]["port"] == "enp1s0f0np0"
    assert found["enp1s0f0np0"]["others"] == 1 and found["enp1s0f0np0"]["age"] == 20
    assert found["enp1s0f1np1"]["others"] == 0
    assert found["enp1s0f0np0"]["mgmt_ip"] == "172.30.90.11"  # the IPv4 one of the two mgmt-ip lines


def test_a_triangle_as_cabled_shows_no_difference(triangle):
    found = {node: lldp.parse((RDMA / ("lldpctl-keyvalue-%s.txt" % node)).read_text()) for node in ("dgx1", "dgx2")}
    seen = lldp.observed(found, ["dgx1", "dgx2", "dgx3"])
    assert seen[("dgx1", 0)] == ("dgx2", 1) and seen[("dgx1", 1)] == ("dgx3", 0)
    lines = lldp.differences(triangle.cable_table(), seen)
    assert lines == ["dgx3 port 0: no LLDP neighbour seen (site: dgx1:1)",
                     "dgx3 port 1: no LLDP neighbour seen (site: dgx2:0)"]


def swapped_at_dgx2():
    return {("dgx1", 0): ("dgx2", 0), ("dgx2", 0): ("dgx1", 0), ("dgx2", 1): ("dgx3", 1), ("dgx3", 1): ("dgx2", 1),
            ("dgx1", 1): ("dgx3", 0), ("dgx3", 0): ("dgx1", 1)}


def test_two_swapped_plugs_are_named_once_with_their_mirror(triangle):
    seen = swapped_at_dgx2()
    assert lldp.swaps(triangle.cable_table(), seen) == [
        "cables swapped at dgx2:0 and dgx2:1 (or, the same wiring, at dgx1:0 and dgx3:1): "
        "dgx2:0 reaches dgx1:0, dgx2:1 reaches dgx3:1"]
    assert "dgx2 port 0 is cabled to dgx1:0; the site says dgx3:1" in lldp.differences(triangle.cable_table(), seen)


def test_paths_of_one_port_that_disagree_leave_the_port_unknown():
    found = {"dgx1": {"enp1s0f0np0": {"name": "dgx2", "port": "enp1s0f1np1"},
                      "enP2p1s0f0np0": {"name": "dgx3", "port": "enP2p1s0f0np0"}}}
    assert lldp.observed(found, ["dgx1", "dgx2", "dgx3"]) == {("dgx1", 0): None}


def test_the_suggested_site_is_valid_and_describes_the_cabling_found(site):
    written = site("tp3-triangle", 3)
    suggested = lldp.suggest_site(written, swapped_at_dgx2())
    assert suggested["nodes"][1]["cables"] == {0: "dgx1:0", 1: "dgx3:1"}
    cluster = topology.build(suggested)
    assert {(r["a"], r["a_port"], r["b"], r["b_port"]) for r in cluster.cable_table()} == {
        ("dgx1", 0, "dgx2", 0), ("dgx1", 1, "dgx3", 0), ("dgx2", 1, "dgx3", 1)}
    assert written["nodes"][1].get("cables") is None  # the site given is left alone
