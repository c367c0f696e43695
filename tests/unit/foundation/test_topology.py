"""The one cluster model: shapes, cabling, addresses, and every way a site file can be wrong."""

import copy
import ipaddress
from pathlib import Path

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology

INVENTORIES = Path(__file__).resolve().parents[3] / "inventories"


def site(shape="tp4-ring", count=None, **extra):
    count = count or topology.SHAPES[shape].nodes
    data = {
        "plugin": "dgxspark.ds41f.spark_topology",
        "shape": shape,
        "nodes": [{"name": "dgx%d" % (i + 1), "address": "192.168.1.%d" % (11 + i)} for i in range(count)],
    }
    data.update(extra)
    return data


def example(name):
    path = next((INVENTORIES / name).glob("*.spark.yml"))
    return yaml.safe_load(path.read_text())


# -- shapes ------------------------------------------------------------------------------------------


def test_shapes_follow_the_seeds_table():
    ring = topology.SHAPES["tp4-ring"]
    assert (ring.nodes, ring.context, ring.max_seqs, ring.batched_tokens) == (4, 1048576, 16, 16384)
    assert ring.kv_cache_bytes == 11274289152  # 10.5 GiB per rank
    assert ring.cudagraph_max_rows == 96 and ring.long_prefill_threshold == 16288
    tri = topology.SHAPES["tp3-triangle"]
    assert tri.kv_cache_bytes == 5268045824 and tri.long_prefill_threshold == 6096
    four_k = topology.SHAPES["tp3-triangle-4k"]
    assert four_k.page_size == 4096 and four_k.context == 262144 and not four_k.memory_saver_required
    assert four_k.qualified_reference is None
    assert [topology.SHAPES["tp%d-switched" % n].nodes for n in range(3, 9)] == [3, 4, 5, 6, 7, 8]
    assert topology.SHAPES["tp8-switched"].min_free_gib_workers == 53.95


# -- addresses ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(topology.SHAPES))
def test_every_shape_has_unique_reciprocal_stable_addresses(name):
    data = site(name)
    cluster = topology.build(data)
    again = topology.build(copy.deepcopy(data))
    seen = set()
    for node in cluster.nodes:
        links = cluster.links(node.name)
        assert links == again.links(node.name)  # derived, so stable across runs
        for link in links:
            assert link["address"] not in seen
            seen.add(link["address"])
            assert ipaddress.ip_address(link["address"]) in ipaddress.ip_network(link["cidr"])
            for peer in link["peers"]:
                theirs = [x for x in cluster.links(peer["name"]) if x["netdev"] == peer["netdev"]]
                assert len(theirs) == 1
                assert theirs[0]["address"] == peer["address"]
                assert theirs[0]["cidr"] == link["cidr"]
                if link["peer"] is not None:  # switchless: the peer's link points back here
                    assert theirs[0]["peer"] == node.name and theirs[0]["peer_address"] == link["address"]
    assert cluster.head.rank == 0 and [w.rank for w in cluster.workers] == list(range(1, len(cluster.nodes)))


def test_ring_default_addresses_follow_the_seeds_scheme():
    cluster = topology.build(site("tp4-ring"))
    dgx2 = {link["netdev"]: link for link in cluster.links("dgx2")}
    assert dgx2["enp1s0f0np0"]["address"] == "10.23.1.2" and dgx2["enp1s0f0np0"]["peer"] == "dgx3"
    assert dgx2["enP2p1s0f0np0"]["cidr"] == "10.23.2.0/24"
    assert dgx2["enp1s0f1np1"]["peer_address"] == "10.12.1.1"
    assert dgx2["enp1s0f1np1"]["peer_netdev"] == "enp1s0f0np0"
    assert dgx2["enp1s0f0np0"]["hca"] == "rocep1s0f0" and dgx2["enP2p1s0f1np1"]["hca"] == "roceP2p1s0f1"
    assert cluster.nccl_hcas("dgx2") == ["rocep1s0f0", "roceP2p1s0f0", "rocep1s0f1", "roceP2p1s0f1"]
    assert cluster.peer_hcas("dgx1") == {1: ["rocep1s0f0", "roceP2p1s0f0"], 3: ["rocep1s0f1", "roceP2p1s0f1"]}


def test_ring_has_no_cable_between_ranks_two_apart():
    cluster = topology.build(site("tp4-ring"))
    pairs = {frozenset((row["a"], row["b"])) for row in cluster.cable_table()}
    assert frozenset(("dgx1", "dgx3")) not in pairs and frozenset(("dgx2", "dgx4")) not in pairs
    assert len(pairs) == 4


def test_triangle_cables_every_pair():
    cluster = topology.build(site("tp3-triangle"))
    pairs = {frozenset((row["a"], row["b"])) for row in cluster.cable_table()}
    assert len(pairs) == 3


def test_switched_shares_one_subnet_per_rail():
    cluster = topology.build(site("tp8-switched", switch_ports=[0, 1]))
    rails = {}
    for node in cluster.nodes:
        for link in cluster.links(node.name):
            rails.setdefault(link["netdev"], set()).add(link["cidr"])
            assert len(link["peers"]) == 7 and link["peer"] is None
    assert {k: len(v) for k, v in rails.items()} == dict.fromkeys(topology.ALL_NETDEVS, 1)
    assert rails["enp1s0f0np0"] == {"10.100.1.0/24"}
    assert cluster.links("dgx5")[0]["address"] == "10.100.1.5"


def test_pool_carves_one_slash24_per_path_deterministically():
    cluster = topology.build(site("tp4-ring", fabric_pool="172.20.0.0/21"))
    cidrs = sorted({row["cidr"] for row in cluster.cable_table()})
    assert cidrs == ["172.20.%d.0/24" % i for i in range(8)]
    assert cluster.links("dgx1")[0]["address"] == "172.20.0.1"


def test_cable_overrides_that_agree_change_the_ports():
    data = site("tp3-triangle")
    # dgx1 and dgx2 swap which port faces which neighbour; both ends say so.
    data["nodes"][0]["cables"] = {0: "dgx3:1", 1: "dgx2:0"}
    data["nodes"][1]["cables"] = {0: "dgx1:1", 1: "dgx3:0"}
    data["nodes"][2]["cables"] = {0: "dgx2:1", 1: "dgx1:0"}
    cluster = topology.build(data)
    dgx1 = {link["netdev"]: link for link in cluster.links("dgx1")}
    assert dgx1["enp1s0f0np0"]["peer"] == "dgx3" and dgx1["enp1s0f1np1"]["peer"] == "dgx2"


def test_explicit_ranks_order_the_nodes():
    data = site("tp3-triangle")
    for node, rank in zip(data["nodes"], (2, 0, 1), strict=True):
        node["rank"] = rank
    cluster = topology.build(data)
    assert [n.name for n in cluster.nodes] == ["dgx2", "dgx3", "dgx1"]
    assert cluster.head.name == "dgx2"


def test_hostvars_and_groupvars_carry_what_the_stages_read():
    cluster = topology.build(site("tp4-ring", ssh_user="ubuntu", context=524288))
    hv = cluster.hostvars("dgx3")
    assert hv["ansible_host"] == "192.168.1.13" and hv["ansible_user"] == "ubuntu"
    assert hv["spark_rank"] == 2 and hv["spark_management_interface"] == "enP7s7"
    gv = cluster.groupvars()
    assert gv["spark_shape"]["context"] == 524288 and gv["spark_shape"]["transport"] == "oneshot-ring4"
    assert gv["spark_head"] == "dgx1" and gv["spark_gid_index"] == 3 and gv["spark_mtu"] == 9000
    assert cluster.group_names() == ["spark_cluster", "spark_tp4_ring"]


@pytest.mark.parametrize("name", ["ring4", "triangle3", "switched", "lab"])
def test_example_sites_are_valid(name):
    cluster = topology.build(example(name))
    assert len(cluster.nodes) == cluster.shape.nodes


# -- bad input: every case names its field and says how to fix it ------------------------------------


def mutate(fn, shape="tp4-ring"):
    data = site(shape)
    fn(data)
    return data


def _set_node(i, **kv):
    return lambda d: d["nodes"][i].update(kv)


def _cables(i, value):
    return lambda d: d["nodes"][i].__setitem__("cables", value)


BAD = [
    ("shape missing", lambda d: d.pop("shape"), "shape", "add shape"),
    ("unknown shape", lambda d: d.update(shape="tp2-pair"), "shape", "not a known shape"),
    ("shape not a string", lambda d: d.update(shape=4), "shape", "not a known shape"),
    ("unknown top-level key", lambda d: d.update(nodse=[]), "nodse", "not a site setting"),
    ("nodes missing", lambda d: d.pop("nodes"), "nodes", "list of nodes"),
    ("nodes not a list", lambda d: d.update(nodes={"dgx1": "192.168.1.11"}), "nodes", "list of nodes"),
    ("too few nodes for the shape", lambda d: d["nodes"].pop(), "nodes", "needs exactly 4 nodes"),
    ("too many nodes for the shape",
     lambda d: d["nodes"].append({"name": "dgx5", "address": "192.168.1.15"}), "nodes", "tp5-switched"),
    ("node not a mapping", lambda d: d["nodes"].__setitem__(1, "dgx2"), "nodes[1]", "must be a mapping"),
    ("unknown node key", _set_node(0, adress="x"), "nodes[0].adress", "not a node setting"),
    ("duplicate names", _set_node(1, name="dgx1"), "nodes[1].name", "also nodes[0]"),
    ("invalid name", _set_node(2, name="dgx_3!"), "nodes[2].name", "not a valid host name"),
    ("duplicate addresses", _set_node(3, address="192.168.1.11"), "nodes[3].address", "also the address"),
    ("invalid address", _set_node(1, address="192.168.1.300"), "nodes[1].address", "not an IPv4 address"),
    ("IPv6 address", _set_node(1, address="fe80::1"), "nodes[1].address", "not an IPv4 address"),
    ("address not a string", _set_node(1, address=3232235788), "nodes[1].address", "not an IPv4 address"),
    ("duplicate ranks", lambda d: [n.update(rank=i % 3) for i, n in enumerate(d["nodes"])], "nodes[3].rank",
     "also nodes[0]"),
    ("rank out of range", lambda d: [n.update(rank=i + 1) for i, n in enumerate(d["nodes"])], "nodes[3].rank",
     "not a rank from 0 to 3"),
    ("rank as a string", lambda d: [n.update(rank=str(i)) for i, n in enumerate(d["nodes"])], "nodes[0].rank",
     "not a rank"),
    ("ranks on some nodes only", _set_node(0, rank=0), "nodes", "some nodes give a rank"),
    ("ranks not in cable order on a ring",
     lambda d: d.update(nodes=[
         {"name": "dgx1", "address": "192.168.1.11", "cables": {0: "dgx2:1", 1: "dgx4:0"}},
         {"name": "dgx3", "address": "192.168.1.13", "cables": {0: "dgx4:1", 1: "dgx2:0"}},
         {"name": "dgx2", "address": "192.168.1.12", "cables": {0: "dgx3:1", 1: "dgx1:0"}},
         {"name": "dgx4", "address": "192.168.1.14", "cables": {0: "dgx1:1", 1: "dgx3:0"}},
     ]), "nodes", "ranks two apart have no cable"),
    ("override not reciprocal", _cables(0, {0: "dgx3:1"}), "nodes[0].cables.0", "not reciprocal"),
    ("override uses a peer port twice", _cables(0, {0: "dgx2:1", 1: "dgx2:1"}), "nodes[0].cables.1",
     "also the peer of port 0"),
    ("override to itself", _cables(0, {0: "dgx1:1"}), "nodes[0].cables.0", "to itself"),
    ("override bad port", _cables(0, {2: "dgx2:1"}), "nodes[0].cables.2", "not a ConnectX-7 port"),
    ("override unknown peer", _cables(0, {0: "dgx9:1"}), "nodes[0].cables.0", "naming a node of this site"),
    ("override not a mapping", _cables(0, ["dgx2:1"]), "nodes[0].cables", "must map a port"),
    ("invalid management interface", _set_node(0, management_interface="a very long name"),
     "nodes[0].management_interface", "not an interface name"),
    ("pool not a CIDR", lambda d: d.update(fabric_pool="10.60.0.0"), "fabric_pool", "not an IPv4 CIDR"),
    ("pool with host bits", lambda d: d.update(fabric_pool="10.60.0.1/16"), "fabric_pool", "host bits"),
    ("pool too small", lambda d: d.update(fabric_pool="10.60.0.0/23"), "fabric_pool", "needs 8"),
    ("pool smaller than a /24", lambda d: d.update(fabric_pool="10.60.0.0/25"), "fabric_pool", "smaller than one"),
    ("pool overlaps management",
     lambda d: d.update(fabric_pool="192.168.0.0/16", management_network="192.168.1.0/24"), "fabric_pool",
     "overlaps the management network"),
    ("default fabric overlaps management",
     lambda d: d.update(management_network="10.12.0.0/16",
                        nodes=[{"name": "dgx%d" % i, "address": "10.12.9.%d" % i} for i in range(1, 5)]),
     "management_network", "overlaps"),
    ("management address inside a fabric subnet", _set_node(0, address="10.12.1.99"), "nodes[0].address",
     "inside the fabric subnet"),
    ("management address outside its network", lambda d: d.update(management_network="192.168.2.0/24"),
     "nodes[0].address", "outside management_network"),
    ("management network invalid", lambda d: d.update(management_network="192.168.1/24"), "management_network",
     "not an IPv4 CIDR"),
    ("mtu as a string", lambda d: d.update(mtu="9000"), "mtu", "no quotes"),
    ("mtu too large", lambda d: d.update(mtu=65000), "mtu", "1280 to 9216"),
    ("gid index invalid", lambda d: d.update(gid_index="three"), "gid_index", "neither a GID slot"),
    ("gid index a boolean", lambda d: d.update(gid_index=True), "gid_index", "neither a GID slot"),
    ("switch ports on a switchless shape", lambda d: d.update(switch_ports=[0]), "switch_ports",
     "only applies to switched shapes"),
    ("context above the shape", lambda d: d.update(context=2097152), "context", "more than tp4-ring holds"),
    ("context as a string", lambda d: d.update(context="1048576"), "context", "no quotes"),
    ("vars not a mapping", lambda d: d.update(vars=["a"]), "vars", "must be a mapping"),
    ("vars with an invalid name", lambda d: d.update(vars={"serve-port": 1}), "vars.serve-port",
     "not a valid variable name"),
    ("ssh user invalid", lambda d: d.update(ssh_user="root user"), "ssh_user", "Unix user name"),
]


@pytest.mark.parametrize("label, change, field, text", BAD, ids=[b[0] for b in BAD])
def test_bad_site_names_the_field_and_the_fix(label, change, field, text):
    with pytest.raises(topology.TopologyError) as info:
        topology.build(mutate(change))
    problems = info.value.problems
    assert any(p.field.startswith(field) or p.field == field for p in problems), [str(p) for p in problems]
    assert any(text in str(p) for p in problems), [str(p) for p in problems]
    assert all(p.fix for p in problems)
    assert "Fix:" in str(info.value)


def test_a_4k_shape_with_a_64k_only_context_points_at_the_64k_shape():
    data = site("tp3-triangle-4k", context=1048576)
    with pytest.raises(topology.TopologyError) as info:
        topology.build(data)
    text = str(info.value)
    assert "context:" in text and "64 KiB kernel" in text and "tp3-triangle" in text


def test_switched_shapes_reject_cable_overrides():
    data = site("tp3-switched")
    data["nodes"][0]["cables"] = {0: "dgx2:1"}
    with pytest.raises(topology.TopologyError, match=r"nodes\[0\].cables: cable overrides do not apply"):
        topology.build(data)


def test_all_problems_are_reported_at_once():
    data = site("tp4-ring", mtu="9000", gid_index="x")
    data["nodes"][1]["address"] = "nope"
    with pytest.raises(topology.TopologyError) as info:
        topology.build(data)
    assert {p.field for p in info.value.problems} == {"mtu", "gid_index", "nodes[1].address"}


def test_the_bad_input_table_is_large_enough():
    assert len(BAD) >= 30
