"""Ring transit: each node routes the /24s it is not on through the neighbour that is, on the same PCIe path."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import transit


def test_ranks_two_apart_are_reached_through_either_neighbour(ring):
    routes = transit.routes("dgx1", ring.links("dgx1"), ring.cable_table())
    assert routes == [
        {"netdev": "enp1s0f0np0", "to": "10.23.1.0/24", "via": "10.12.1.2"},
        {"netdev": "enP2p1s0f0np0", "to": "10.23.2.0/24", "via": "10.12.2.2"},
        {"netdev": "enp1s0f1np1", "to": "10.34.1.0/24", "via": "10.14.1.4"},
        {"netdev": "enP2p1s0f1np1", "to": "10.34.2.0/24", "via": "10.14.2.4"},
    ]


def test_the_way_back_is_the_mirror(ring):
    # dgx3 answers dgx1 (10.12.x.1) through dgx2, the neighbour on dgx1's cable.
    routes = {r["to"]: r for r in transit.routes("dgx3", ring.links("dgx3"), ring.cable_table())}
    assert routes["10.12.1.0/24"]["via"] == "10.23.1.2" and routes["10.14.2.0/24"]["via"] == "10.34.2.4"


def test_a_triangle_has_nothing_to_route(triangle):
    assert transit.routes("dgx2", triangle.links("dgx2"), triangle.cable_table()) == []


def test_forwarding_is_accepted_between_fabric_netdevs_only(ring):
    rules = transit.forward_rules(ring.links("dgx1"))
    assert len(rules) == 12 and ("enp1s0f0np0", "enp1s0f1np1") in rules
    assert all(a != b and a.startswith("en") and "eth" not in a + b for a, b in rules)
