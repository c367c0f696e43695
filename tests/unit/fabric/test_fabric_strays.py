"""The fabric's whole kind: what `ip -j` shows on a node against what the site derives, from outputs recorded on a lab
ring (tests/fixtures/fabric-strays, SOURCE.md): a converged node has no stray, each fault made by hand is one stray
named in ip's own words with the path it concerns and the command that removes it, and a failing ping is explained
by the stray that takes its path. Cases are also generated from every link of every shape."""

import json

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, fabric_strays, links, transit
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
from ansible_collections.dgxspark.ds41f.plugins.modules import fabric_links
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "fabric-strays"


def reading(state, node):
    """What links.read_all returned on a lab node, from the recorded outputs of its commands."""
    return {name: json.loads((RECORDED / ("%s-%s-%s.json" % (state, node, name))).read_text())
            for name in links.READ_ALL}


def judged(ring, state, node, transit_routes=()):
    return [(s["kind"], s["name"], s["path"], s["found"])
            for s in fabric_strays.judge(reading(state, node), ring.links(node), transit_routes)]


def test_a_converged_node_and_a_repaired_one_have_no_stray(ring):
    assert judged(ring, "clean", "dgx1") == []
    assert judged(ring, "repaired", "dgx1") == []


def test_each_fault_made_by_hand_is_one_stray_in_ip_s_words_with_its_path(ring):
    """dgx1: the peer's address on a MAC no node has, a route to dgx4's address through a gateway nobody holds, a
    spare address of a path's subnet; dgx2: a blackhole for dgx3's address, a rule that prohibits another, an IPv6
    address (the site has none on the fabric). Rules come first, addresses last: the order they are removed in."""
    assert judged(ring, "bad", "dgx1") == [
        ("route", "10.14.1.4 via 10.14.1.254 dev enp1s0f1np1", "10.14.1.0/24", "present"),
        ("neighbour", "10.12.1.2 dev enp1s0f0np0", "10.12.1.0/24", "lladdr 02:00:00:00:00:01, permanent"),
        ("address", "10.12.2.253/24 dev enP2p1s0f0np0", "10.12.2.0/24", "10.12.2.253/24")]
    assert judged(ring, "bad", "dgx2") == [
        ("rule", "pref 1000 to 10.23.1.3/32 prohibit", "10.23.1.0/24", "present"),
        ("route", "blackhole 10.23.2.3", "10.23.2.0/24", "present"),
        ("address", "fd00:23::2/64 dev enP2p1s0f0np0", "10.23.2.0/24", "fd00:23::2/64")]
    removes = [s["remove"] for s in fabric_strays.judge(reading("bad", "dgx2"), ring.links("dgx2"))]
    assert removes == [["ip", "-4", "rule", "del", "pref", "1000", "to", "10.23.1.3/32", "prohibit"],
                       ["ip", "-4", "route", "del", "blackhole", "10.23.2.3"],
                       ["ip", "address", "del", "fd00:23::2/64", "dev", "enP2p1s0f0np0"]]


def test_ring_transit_routes_are_the_site_s_only_when_transit_is_on(ring):
    """Recorded with fabric_ring_transit on: the routes to the subnets of the node across the ring are derived then,
    and strays of a ring without transit (which its converge removes)."""
    routes = transit.routes("dgx1", ring.links("dgx1"), ring.cable_table())
    assert judged(ring, "transit", "dgx1", routes) == []
    left = judged(ring, "transit", "dgx1")
    assert [(kind, name.split()[0]) for kind, name, _, _ in left] == [("route", r["to"]) for r in routes]


def test_a_stray_explains_the_failing_pings_of_the_path_it_takes(ring):
    strays = {s["kind"]: s for s in fabric_strays.judge(reading("bad", "dgx1"), ring.links("dgx1"))}
    to_dgx2, to_dgx4 = (next(link for link in ring.links("dgx1") if link["netdev"] == netdev)
                        for netdev in ("enp1s0f0np0", "enp1s0f1np1"))
    assert fabric_strays.takes(strays["neighbour"], to_dgx2, "10.12.1.2")
    assert not fabric_strays.takes(strays["neighbour"], to_dgx4, "10.12.1.2")  # another netdev's entry
    assert fabric_strays.takes(strays["route"], to_dgx4, "10.14.1.4")
    assert not fabric_strays.takes(strays["route"], to_dgx2, "10.12.1.2")
    assert not any(fabric_strays.takes(strays["address"], link, peer["address"])  # a spare address takes nothing
                   for link in ring.links("dgx1") for peer in link["peers"])
    dgx2 = fabric_strays.judge(reading("bad", "dgx2"), ring.links("dgx2"))
    paths = {link["netdev"]: link for link in ring.links("dgx2")}
    assert [s["kind"] for s in dgx2 if fabric_strays.takes(s, paths["enp1s0f0np0"], "10.23.1.3")] == ["rule"]
    assert [s["kind"] for s in dgx2 if fabric_strays.takes(s, paths["enP2p1s0f0np0"], "10.23.2.3")] == ["route"]


def converged(mine):
    """The recorded converged node, its CX7 netdevs holding the addresses of ``mine`` (another node's links)."""
    base = reading("clean", "dgx1")
    owned = {link["netdev"]: link for link in mine}
    addr = []
    for item in base["addr"]:
        if item["ifname"] in owned:
            link = owned[item["ifname"]]
            item = dict(item, addr_info=[{"family": "inet", "local": link["address"], "prefixlen": link["prefix"]}])
        elif fc.port_of(item["ifname"]):
            continue  # a CX7 netdev this node does not use
        addr.append(item)
    return dict(base, addr=addr)


@pytest.mark.parametrize("shape", ["triangle", "ring", "switched"])
def test_every_link_of_every_shape_a_wrong_neighbour_for_each_peer_is_one_stray_that_takes_only_its_path(
        shape, request):
    """Generated from the site: on the recorded converged node, for each link and each of its peers, a permanent
    entry with a wrong MAC (as `ip -j neigh` shows one), a host route to the peer through another address of its
    subnet, and the peer's address held here."""
    cluster = request.getfixturevalue(shape)
    for node in cluster.nodes:
        mine = cluster.links(node.name)
        base = converged(mine)
        assert fabric_strays.judge(base, mine) == []
        for link in mine:
            for peer in link["peers"]:
                faults = {
                    "neigh": {"dst": peer["address"], "dev": link["netdev"], "lladdr": "02:00:00:00:00:01",
                              "state": ["PERMANENT"]},
                    "route4": {"dst": peer["address"], "gateway": link["address"], "dev": link["netdev"],
                               "flags": ["onlink"]},
                    "addr": {"ifname": "eth0", "addr_info": [{"family": "inet", "local": peer["address"],
                                                               "prefixlen": 32}]},
                }
                for name, fault in faults.items():
                    found = fabric_strays.judge(dict(base, **{name: base[name] + [fault]}), mine)
                    assert [s["path"] for s in found] == [link["cidr"]], (node.name, link["netdev"], name)
                    taken = [(other["netdev"], p["address"]) for other in mine for p in other["peers"]
                             if fabric_strays.takes(found[0], other, p["address"])]
                    assert taken == [(link["netdev"], peer["address"])], (node.name, link["netdev"], name)


def test_read_all_reads_ipv6_only_where_the_node_has_it():
    ran = []

    def run(argv):
        ran.append(argv)
        return 0, '[{"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}]' \
            if argv[2] == "addr" else "[]", ""

    assert links.read_all(run)["route6"] == [] and ["ip", "-j", "-6", "route", "show", "table", "all"] not in ran
    with pytest.raises(RuntimeError, match="ip -j neigh show failed: Cannot open netlink socket"):
        links.read_all(lambda argv: (1, "", "Cannot open netlink socket") if argv[2] == "neigh" else (0, "[]", ""))


class Node:
    """Enough of AnsibleModule for fabric_links: ip answers from a recorded lab node, every command kept."""

    def __init__(self, params, state, node, check_mode):
        self.params, self.check_mode, self.ran, self.vanished = params, check_mode, [], False
        self.recorded = reading(state, node)

    def get_bin_path(self, name, required=False):
        return "/usr/sbin/" + name

    def run_command(self, argv):
        self.ran.append(argv)
        for name, read in links.READ_ALL.items():
            if argv == read:
                return 0, json.dumps(self.recorded[name]), ""
        if argv[:3] == ["ip", "neigh", "del"] and self.vanished:  # gone by itself just before
            self.recorded = reading("repaired", "dgx1")
            return 2, "", "RTNETLINK answers: No such file or directory"
        return 0, "", ""

    def fail_json(self, **kw):
        raise AssertionError(kw)

    def exit_json(self, **kw):
        self.result = kw


def converge(ring, state, node, check_mode, monkeypatch, vanished=False):
    monkeypatch.setattr(fabric_links, "read_conf", lambda netdev, key: "1" if key == "arp_ignore" else "2")
    module = Node({"links": ring.links(node), "mtu": 9000, "routes": [], "node": node}, state, node, check_mode)
    module.vanished = vanished
    fabric_links.run(module)
    return module


def test_the_links_module_names_each_stray_as_its_object_and_removes_it_first_in_a_run(ring, monkeypatch):
    audit = converge(ring, "bad", "dgx1", True, monkeypatch)
    rows = drift.rows_from_result("dgx1", "fabric", "Live CX7 state matches the site", audit.result)
    assert [(r["setting"], r["object"], r["path"], r["fix"], r["action"]) for r in rows] == [
        ("dgx1 route 10.14.1.4 via 10.14.1.254 dev enp1s0f1np1",
         {"node": "dgx1", "kind": "route", "name": "10.14.1.4 via 10.14.1.254 dev enp1s0f1np1"}, "10.14.1.0/24",
         "ds41f run fabric", "ip -4 route del 10.14.1.4 via 10.14.1.254 dev enp1s0f1np1 (not in the site)"),
        ("dgx1 neighbour 10.12.1.2 dev enp1s0f0np0",
         {"node": "dgx1", "kind": "neighbour", "name": "10.12.1.2 dev enp1s0f0np0"}, "10.12.1.0/24",
         "ds41f run fabric", "ip neigh del 10.12.1.2 dev enp1s0f0np0 (not in the site)"),
        ("dgx1 address 10.12.2.253/24 dev enP2p1s0f0np0",
         {"node": "dgx1", "kind": "address", "name": "10.12.2.253/24 dev enP2p1s0f0np0"}, "10.12.2.0/24",
         "ds41f run fabric", "ip address del 10.12.2.253/24 dev enP2p1s0f0np0 (not in the site)")]
    assert audit.ran == list(links.READ_ALL.values()) and audit.result["changed"]  # check mode only reads
    run = converge(ring, "bad", "dgx1", False, monkeypatch)
    assert [argv for argv in run.ran if argv[:2] != ["ip", "-j"]] == [
        ["ip", "-4", "route", "del", "10.14.1.4", "via", "10.14.1.254", "dev", "enp1s0f1np1"],
        ["ip", "neigh", "del", "10.12.1.2", "dev", "enp1s0f0np0"],
        ["ip", "address", "del", "10.12.2.253/24", "dev", "enP2p1s0f0np0"]]
    # A stray that is gone when its turn comes (networkd dropped it meanwhile) is no failure; one still there is.
    assert converge(ring, "bad", "dgx1", False, monkeypatch, vanished=True).result["changed"]
    with pytest.raises(AssertionError, match="ip neigh del 10.12.1.2 dev enp1s0f0np0 failed: permission denied"):
        broken = Node({"links": ring.links("dgx1"), "mtu": 9000, "routes": [], "node": "dgx1"}, "bad", "dgx1", False)
        broken.run_command = lambda argv: (1, "", "permission denied") if argv[:3] == ["ip", "neigh", "del"] else \
            Node.run_command(broken, argv)
        fabric_links.run(broken)
    assert converge(ring, "clean", "dgx1", True, monkeypatch).result["changed"] is False
    managed = converge(ring, "clean", "dgx1", True, monkeypatch).result["managed"]
    assert {m["name"]: m["peers"] for m in managed} == {
        link["netdev"]: [p["address"] for p in link["peers"]] for link in ring.links("dgx1")}


def test_a_path_a_stray_takes_names_it_as_its_cause_and_the_far_end_names_it_too(ring):
    """dgx1's wrong neighbour entry for dgx2: dgx1's pings to dgx2 fail (its frames go to that MAC), and so do dgx2's
    to dgx1 (the replies do). dgx1's row names the entry as its cause object; dgx2's, which no end there explains,
    names dgx1's link, and the table says what is wrong at that far end."""
    lost = {"sent": 3, "received": 0, "loss_pct": 100.0, "rtt_avg_ms": None, "error": None, "ok": False}
    stray = next(s for s in fabric_strays.judge(reading("bad", "dgx1"), ring.links("dgx1"))
                 if s["kind"] == "neighbour")
    dgx1 = next(link for link in ring.links("dgx1") if link["netdev"] == "enp1s0f0np0")
    dgx2 = next(link for link in ring.links("dgx2") if link["netdev"] == "enp1s0f1np1")
    near = fc.path_row("dgx1", dgx1, dgx1["peers"][0], lost, 9000, None, None, stray)
    far = fc.path_row("dgx2", dgx2, dgx2["peers"][0], lost, 9000, None, None)
    assert near["cause"] == {"kind": "neighbour", "name": "10.12.1.2 dev enp1s0f0np0"}
    assert near["message"] == ("dgx1 neighbour 10.12.1.2 dev enp1s0f0np0 (lladdr 02:00:00:00:00:01, permanent) takes "
                               "the path; the site derives no such neighbour")
    assert far["cause"] == {"kind": "link", "name": "enp1s0f0np0", "node": "dgx1"}
    assert fc.drift([near])[0]["cause"] == near["cause"]
    merged = fc.merge([near, far])
    assert merged[1]["message"].endswith("; far end: " + near["message"])
    assert fc.causes(merged) == [near["message"]]
    local = fc.path_row("dgx1", dgx1, dgx1["peers"][0], lost, 9000, "dgx1 enp1s0f0np0 MTU 1500 (expected 9000)",
                        None, stray)
    assert "cause" not in local and local["message"].startswith("dgx1 enp1s0f0np0 MTU 1500")  # the link comes first


def test_a_cable_that_hears_nothing_names_the_far_end_s_lldpd(ring):
    link = ring.links("dgx2")[0]
    row = fc.cable_row("dgx2", link, None, True)
    assert row["found"] == fc.NO_NEIGHBOUR and row["cause"] == {"kind": "unit", "name": "lldpd", "node": link["peer"]}
    assert "cause" not in fc.cable_row("dgx2", link, None, False)  # LLDP not running here: skipped, no consequence
