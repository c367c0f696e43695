"""Who sends to whom, on clusters built by the one topology model."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.filter.fanout import fanout_listen, fanout_plan
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fanout, topology


def cluster(shape, count, **extra):
    nodes = [{"name": "dgx%d" % i, "address": "192.168.1.%d" % (10 + i)} for i in range(1, count + 1)]
    return topology.build(dict({"plugin": "dgxspark.ds41f.spark_topology", "shape": shape, "nodes": nodes}, **extra))


def names(c):
    return [n.name for n in c.nodes]


def test_triangle_head_feeds_both_peers_over_their_cables():
    c = cluster("tp3-triangle", 3)
    plan = fanout.endpoints(names(c), c.cable_table(), {n.name: n.address for n in c.nodes}, {"dgx1"},
                            {"dgx2", "dgx3"})
    assert {k: v["name"] for k, v in plan.items()} == {"dgx2": "dgx1", "dgx3": "dgx1"}
    # dgx1's two PCIe-path addresses on the dgx1-dgx2 cable, and its management address as the fallback
    assert plan["dgx2"]["addresses"] == [c.hostvars("dgx2")["spark_links"][i]["peer_address"]
                                         for i in range(4) if c.hostvars("dgx2")["spark_links"][i]["peer"] == "dgx1"]
    assert len(plan["dgx2"]["addresses"]) == 2 and plan["dgx2"]["management_address"] == "192.168.1.11"


def test_ring_reaches_the_node_two_ranks_away_through_a_relay():
    c = cluster("tp4-ring", 4)
    plan = fanout.plan(names(c), c.cable_table(), {"dgx1"}, {"dgx2", "dgx3", "dgx4"})
    assert plan == {"dgx2": {"parent": "dgx1", "wave": 1}, "dgx4": {"parent": "dgx1", "wave": 1},
                    "dgx3": {"parent": "dgx2", "wave": 2}}
    # ranks two apart share no cable, so no fabric address exists between them
    assert fanout.fabric_addresses(c.cable_table(), "dgx3", "dgx1") == []


def test_only_broken_nodes_receive_and_from_a_cabled_holder():
    c = cluster("tp4-ring", 4)
    plan = fanout.plan(names(c), c.cable_table(), {"dgx1", "dgx2", "dgx4"}, {"dgx3"})
    assert plan == {"dgx3": {"parent": "dgx2", "wave": 1}}
    # only dgx3 holds it: the head, two ranks away, is mended through a relay like any node
    plan = fanout.plan(names(c), c.cable_table(), {"dgx3"}, {"dgx1", "dgx2", "dgx4"})
    assert plan == {"dgx2": {"parent": "dgx3", "wave": 1}, "dgx4": {"parent": "dgx3", "wave": 1},
                    "dgx1": {"parent": "dgx2", "wave": 2}}
    with pytest.raises(ValueError, match="no fabric path reaches dgx1"):
        fanout.plan(names(c), c.cable_table(), {"dgx3"}, {"dgx1"})  # its neighbours hold nothing to relay


def test_switch_spreads_the_load_so_no_sender_feeds_more_than_width():
    c = cluster("tp8-switched", 8)
    plan = fanout.plan(names(c), c.cable_table(), {"dgx1"}, set(names(c)) - {"dgx1"}, width=3)
    assert set(plan) == set(names(c)) - {"dgx1"}
    load = {}
    for step in plan.values():
        load[step["parent"]] = load.get(step["parent"], 0) + 1
    assert max(load.values()) <= 3
    assert [n for n, s in plan.items() if s["wave"] == 1] == ["dgx2", "dgx3", "dgx4"]
    # on a switch the parent is reached on the rail's address
    assert fanout.fabric_addresses(c.cable_table(), "dgx8", "dgx1") == ["10.100.1.1", "10.100.2.1"]


def test_nothing_to_send_from_is_an_error():
    c = cluster("tp3-triangle", 3)
    with pytest.raises(ValueError, match="no node holds"):
        fanout.plan(names(c), c.cable_table(), set(), {"dgx2"})


def test_the_filter_counts_the_origin_as_a_holder_and_compares_to_want():
    c = cluster("tp3-triangle", 3)
    nodes = c.groupvars()["spark_nodes"]
    # check mode before the controller's copy reached dgx1: dgx1 is still the origin every child waits for
    plan = fanout_plan(nodes, c.cable_table(), {"dgx1": False, "dgx2": False, "dgx3": True}, "dgx1")
    assert {k: v["name"] for k, v in plan.items()} == {"dgx2": "dgx1"}
    ids = {"dgx1": "sha256:a", "dgx2": "sha256:b", "dgx3": "sha256:a"}
    plan = fanout_plan(nodes, c.cable_table(), ids, "dgx1", 3, "sha256:a")
    assert list(plan) == ["dgx2"]
    listen = fanout_listen(plan, "dgx1", "192.168.1.11")
    assert listen == plan["dgx2"]["addresses"] + ["192.168.1.11"]
    assert fanout_listen(plan, "dgx1", "192.168.1.11", allow_management=False) == plan["dgx2"]["addresses"]
    assert fanout_listen(plan, "dgx3", "192.168.1.13") == ["192.168.1.13"]
