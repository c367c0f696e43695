"""The doctor folds a fabric path by the rows' data, never by their words. Rows come from the producers themselves -
the fabric stage's links module (check mode) and ping matrix, and the verify stage's live check - over the recorded
converged lab node (tests/fixtures/fabric-strays, SOURCE.md) with one fault made at one end of one path: generated
for every path of the site, each end, and each part of a link the stage keeps (its state, MTU and address) plus an
unplugged cable."""

import ast
import copy

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, links, live_checks, topology
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
from ansible_collections.dgxspark.ds41f.plugins.modules import fabric_links
from tests.conftest import ROOT
from tests.unit.fabric.test_fabric_strays import Node, converged

MTU = 9000
SITE = {"shape": "tp4-ring", "nodes": [{"name": "dgx%d" % i, "address": "192.168.1.%d" % (10 + i)}
                                       for i in range(1, 5)]}
# A fault at one end: what `ip -j addr` then shows of its netdev, and of the far end's (which loses its carrier when
# this end goes down or the cable is pulled).
FAULTS = {
    "down": lambda item: dict(item, flags=["BROADCAST", "MULTICAST"], operstate="DOWN"),
    "mtu": lambda item: dict(item, mtu=1500),
    "address": lambda item: dict(item, addr_info=[]),
    "unplugged": lambda item: dict(item, flags=["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"], operstate="DOWN"),
}
NO_CARRIER = FAULTS["unplugged"]
# The row that names each fault: the part of the link (aspect) and whether the path is down.
NAMED = {"down": ("link", True), "mtu": ("mtu", False), "address": ("address", False), "unplugged": ("carrier", True)}


RING = topology.build(SITE)


@pytest.fixture
def ring():
    return RING


def readings(ring, node, netdev, fault):
    """Every node's `ip -j addr` (the recorded converged node holding each node's addresses), the fault applied."""
    out = {n.name: converged(ring.links(n.name)) for n in ring.nodes}
    cable = next(c for c in ring.cable_table() if (node, netdev) in ((c["a"], c["a_netdev"]), (c["b"], c["b_netdev"])))
    far = (cable["b"], cable["b_netdev"]) if (cable["a"], cable["a_netdev"]) == (node, netdev) else (
        cable["a"], cable["a_netdev"])
    changes = {(node, netdev): FAULTS[fault]}
    if fault in ("down", "unplugged"):
        changes[far] = NO_CARRIER
    for (n, dev), change in changes.items():
        out[n] = dict(out[n], addr=[change(item) if item["ifname"] == dev else item for item in out[n]["addr"]])
    return out, cable


def stage_rows(ring, node, reading, monkeypatch):
    """The fabric stage on one node, as the doctor runs it: the links module in check mode, then the ping matrix."""
    monkeypatch.setattr(fabric_links, "read_conf", lambda netdev, key: "1" if key == "arp_ignore" else "2")
    module = Node({"links": ring.links(node), "mtu": MTU, "routes": [], "node": node}, "clean", "dgx1", True)
    module.recorded = reading
    fabric_links.run(module)
    return drift.rows_from_result(node, "fabric", "Live CX7 state matches the site", module.result)


def check_rows(ring, node, state, broken):
    """The fabric stage's check on one node (``fc`` as the module calls it): link, cable (LLDP hears the far end
    while it has a carrier) and path rows, a ping answered unless its path is ``broken``."""
    rows, cidrs = [], {}
    for link in ring.links(node):
        cidrs[link["netdev"]] = link["cidr"]
        row = fc.link_row(node, link, state[link["netdev"]], MTU)
        local = row["message"] if row["status"] == "fail" else None
        heard = {"name": link["peer"], "port": link["peer_netdev"]} if state[link["netdev"]]["carrier"] else None
        cable = fc.cable_row(node, link, heard, True)
        rows += [row, cable]
        for peer in link["peers"]:
            result = fc.parse_ping(1, "3 packets transmitted, 0 received, 100% packet loss", "") \
                if link["cidr"] == broken else fc.parse_ping(0, "3 packets transmitted, 3 received", "")
            rows.append(fc.path_row(node, link, peer, result, MTU, local,
                                    cable["message"] if cable["status"] == "fail" else None))
    return drift.rows_from_result(node, "fabric", "Ping matrix", {"drift": fc.drift(fc.merge(rows), cidrs)})


def live_rows(ring, states, broken):
    """The verify stage's live check over every node's reading (live_state's shape: /sys/class/net and ip -4)."""
    live = {n: {dev: {"present": True, "operstate": "up" if s["carrier"] else "down", "carrier": s["carrier"],
                      "mtu": s["mtu"], "addresses": s["addresses"]} for dev, s in st.items()}
            for n, st in states.items()}
    pings = {n.name: [{"netdev": link["netdev"], "address": peer["address"], "ok": link["cidr"] != broken}
                      for link in ring.links(n.name) for peer in link["peers"]] for n in ring.nodes}
    return drift.rows_from_result("dgx1", "verify", "Live checks", {
        "findings": live_checks.fabric(ring.cable_table(), live, pings, MTU)})


def all_rows(ring, node, netdev, fault, monkeypatch):
    """Every row the doctor's producers give for one fault, in the order its run collects them."""
    reading, cable = readings(ring, node, netdev, fault)
    states = {n: links.addr_state(r["addr"]) for n, r in reading.items()}
    rows = []
    for n in sorted(reading):
        rows += stage_rows(ring, n, reading[n], monkeypatch) + check_rows(ring, n, states[n], cable["cidr"])
    return rows + live_rows(ring, states, cable["cidr"]), cable


def ends(ring):
    return {(n.name, link["netdev"]): link["cidr"] for n in ring.nodes for link in ring.links(n.name)}


def folded(rows):
    """The fold as data: what each row of the table is about."""
    return [(r["node"], r.get("object"), r.get("aspect"), r.get("path"), r.get("down"), r.get("ends")) for r in rows]


CASES = [(i, end, fault) for i in range(len(RING.cable_table())) for end in "ab" for fault in FAULTS]


@pytest.mark.parametrize("cable_index, end, fault", CASES)
def test_one_fault_at_one_end_is_one_row_naming_that_end_by_object(ring, monkeypatch, cable_index, end, fault):
    cable = ring.cable_table()[cable_index]
    node, netdev = cable[end], cable[end + "_netdev"]
    rows, _ = all_rows(ring, node, netdev, fault, monkeypatch)
    assert any(r.get("aspect") == "reachability" for r in rows)  # the pings failed, and fold
    [r] = drift.dedupe(rows, ends(ring))
    aspect, down = NAMED[fault]
    both = [{"node": cable[e], "kind": "link", "name": cable[e + "_netdev"]} for e in "ab"]
    named = both if fault == "unplugged" else [both["ab".index(end)]]  # a pulled cable is neither end's fault
    assert (r["object"] in named, r["aspect"], r["path"], bool(r.get("down"))) == (True, aspect, cable["cidr"], down)
    paths = {c["cidr"] for c in ring.cable_table()}
    assert drift.path_status([r], paths) == dict.fromkeys(paths, "ok") | {cable["cidr"]: "down" if down else "drift"}
    if down:  # one row naming both ends, as data
        assert sorted(r["ends"], key=str) == sorted(both, key=str)


@pytest.mark.parametrize("fault", ["mtu", "address"])
def test_a_fault_at_each_end_of_one_path_is_a_cause_each(ring, monkeypatch, fault):
    cable = ring.cable_table()[0]
    rows = []
    for end in "ab":
        one, _ = all_rows(ring, cable[end], cable[end + "_netdev"], fault, monkeypatch)
        rows += one
    table = drift.dedupe(rows, ends(ring))
    assert sorted((r["object"]["node"], r["object"]["name"], r["aspect"]) for r in table) == sorted(
        (cable[e], cable[e + "_netdev"], fault) for e in "ab")


@pytest.mark.parametrize("fault", ["mtu", "address"])
@pytest.mark.parametrize("check_first", [False, True])
def test_the_row_kept_for_a_link_is_the_one_whose_fix_says_what_it_does(ring, monkeypatch, fault, check_first):
    """The stage's own row (fabric_links: ``ip link set ... mtu 9000``) and the check's view of the same part of the
    same link (fabric_check's link row) are one finding: the table keeps the stage's, in whichever order the run
    collected them (the verify-doctor lab collected the check's first)."""
    cable = ring.cable_table()[0]
    node, netdev = cable["a"], cable["a_netdev"]
    reading, _ = readings(ring, node, netdev, fault)
    stage = stage_rows(ring, node, reading[node], monkeypatch)
    check = check_rows(ring, node, links.addr_state(reading[node]["addr"]), cable["cidr"])
    [r] = drift.dedupe(check + stage if check_first else stage + check, ends(ring))
    assert r in stage and r["action"] and (r["object"]["name"], r["aspect"]) == (netdev, fault)


def test_a_stray_on_a_path_is_kept_beside_its_cause_and_its_pings_fold(ring, monkeypatch):
    first = ring.cable_table()[0]
    rows, cable = all_rows(ring, first["a"], first["a_netdev"], "mtu", monkeypatch)
    stray = drift.row(cable["a"], "fabric", "a neighbour entry", None, "lladdr 02:00:00:00:00:01, permanent",
                      "ds41f run fabric", path=cable["cidr"],
                      about={"kind": "neighbour", "name": "%s dev %s" % (cable["addresses"][cable["b"]],
                                                                       cable["a_netdev"])})
    table = drift.dedupe(rows + [stray], ends(ring))
    assert sorted((r["object"]["kind"], r.get("aspect")) for r in table) == [("link", "mtu"), ("neighbour", None)]


def reworded(rows):
    """The same rows with every message reworded: each distinct setting, found, expected and fix an opaque token."""
    tokens = {}
    out = copy.deepcopy(rows)
    for r in out:
        for column in ("setting", "found", "expected", "fix"):
            r[column] = tokens.setdefault((column, r[column]), "%s %d" % (column, len(tokens)))
    return out


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_rewording_every_message_does_not_change_the_fold(ring, monkeypatch, fault):
    """The proof that the fold reads no words: with every text an opaque token, the table is the same rows."""
    cable = ring.cable_table()[3]
    rows, _ = all_rows(ring, cable["b"], cable["b_netdev"], fault, monkeypatch)
    assert folded(drift.dedupe(reworded(rows), ends(ring))) == folded(drift.dedupe(rows, ends(ring)))
    assert drift.path_status(drift.dedupe(reworded(rows), ends(ring))) == drift.path_status(
        drift.dedupe(rows, ends(ring)))


# The row fields that hold words: code may render them, never read them to decide.
TEXT_FIELDS = {"setting", "found", "expected", "fix", "message", "msg"}


def _text_field(node):
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in TEXT_FIELDS


def test_the_fold_reads_no_message_text():
    """drift.py's folding (dedupe and what it calls, path_status): no method of a row's text field is called
    (split, startswith, ...), and no text field is searched (``in``)."""
    tree = ast.parse((ROOT / "plugins" / "module_utils" / "drift.py").read_text())
    folds = {"dedupe", "attach_paths", "_end", "_cause", "_stray", "_fold_down", "_consolidate_paths", "_same",
             "_restates", "_drop_echoes", "_drop_caused", "path_status", "node_status"}
    found = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)} & folds
    assert found == folds  # the guard follows the functions it names
    reads = []
    for function in (f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in folds):
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and _text_field(node.value):
                reads.append((function.name, node.lineno, node.attr))
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and \
                    any(_text_field(side) for side in [node.left, *node.comparators]):
                reads.append((function.name, node.lineno, "in"))
    assert reads == []
