"""The fabric check's rows and messages, from ping outputs and lldpctl recorded in the lab and GID tables
under tests/fixtures/rdma: each failing row must name the broken end."""

from ansible_collections.dgxspark.ds41f.plugins.module_utils import drift, lldp
from ansible_collections.dgxspark.ds41f.plugins.module_utils import fabric_check as fc
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware import rdma
from ansible_collections.dgxspark.ds41f.plugins.module_utils.hardware.host import Host
from tests.conftest import FIXTURES

RDMA = FIXTURES / "rdma"
GOOD = {"up": True, "carrier": True, "mtu": 9000, "addresses": ["10.12.1.1/24"]}


def ping(name):
    return fc.parse_ping(int((RDMA / ("ping-%s.rc" % name)).read_text()), (RDMA / ("ping-%s.out" % name)).read_text(),
                         (RDMA / ("ping-%s.err" % name)).read_text())


def link(cluster, node, netdev):
    return next(item for item in cluster.links(node) if item["netdev"] == netdev)


def test_ping_argv_sends_unfragmentable_frames_of_exactly_the_mtu_out_of_one_netdev():
    argv = fc.ping_argv("enp1s0f0np0", "10.12.1.2", 9000, 3, 1)
    assert argv[argv.index("-M") + 1] == "do" and argv[argv.index("-s") + 1] == "8972"
    assert argv[argv.index("-I") + 1] == "enp1s0f0np0" and argv[-1] == "10.12.1.2"


def test_recorded_pings_parse_into_loss_and_rtt():
    assert ping("ok") == {"sent": 3, "received": 3, "loss_pct": 0.0, "rtt_avg_ms": 0.055, "error": None, "ok": True}
    assert ping("far-mtu")["loss_pct"] == 100.0 and not ping("far-mtu")["ok"]
    # without an address the only complaint is ping's warning about the source address
    assert ping("no-address")["error"] == "Warning: source address might be selected on device other than: " \
                                          "enP2p1s0f1np1"


def test_a_good_path_is_ok_with_its_rtt(triangle):
    row = fc.path_row("dgx1", link(triangle, "dgx1", "enp1s0f0np0"), {"name": "dgx2", "address": "10.12.1.2",
                      "netdev": "enp1s0f1np1"}, ping("ok"), 9000, None, None)
    assert row["status"] == "ok" and row["found"] == "3/3 replies, avg 0.055 ms" and row["rtt_ms"] == 0.055


def test_a_local_mtu_reset_is_named_on_the_link_and_on_the_path(triangle):
    mine = link(triangle, "dgx1", "enp1s0f0np0")
    state = dict(GOOD, mtu=1500)
    row = fc.link_row("dgx1", mine, state, 9000)
    assert row["status"] == "fail" and row["message"] == "dgx1 enp1s0f0np0 MTU 1500 (expected 9000)"
    path = fc.path_row("dgx1", mine, mine["peers"][0], ping("local-mtu"), 9000, row["message"], None)
    assert path["message"] == "dgx1 enp1s0f0np0 MTU 1500 (expected 9000)"


def test_the_far_end_of_a_failing_path_says_what_is_wrong_there(triangle):
    dgx1, dgx2 = link(triangle, "dgx1", "enp1s0f0np0"), link(triangle, "dgx2", "enp1s0f1np1")
    rows = [fc.link_row("dgx1", dgx1, dict(GOOD, mtu=1500), 9000),
            fc.link_row("dgx2", dgx2, dict(GOOD, addresses=["10.12.1.2/24"]), 9000),
            fc.path_row("dgx2", dgx2, dgx2["peers"][0], ping("far-mtu"), 9000, None, None)]
    merged = fc.merge(rows)
    assert merged[2]["message"] == ("no 9000-byte reply from dgx1 10.12.1.1 over dgx2 enp1s0f1np1; "
                                    "far end: dgx1 enp1s0f0np0 MTU 1500 (expected 9000)")
    assert fc.causes(merged) == ["dgx1 enp1s0f0np0 MTU 1500 (expected 9000)"]


def test_link_problems_in_the_order_a_sysadmin_would_look(triangle):
    mine = link(triangle, "dgx2", "enP2p1s0f1np1")
    assert fc.link_problem("dgx2", "enP2p1s0f1np1", None, mine, 9000) == "dgx2 has no netdev enP2p1s0f1np1"
    down = dict(GOOD, up=False)
    assert fc.link_problem("dgx2", "enP2p1s0f1np1", down, mine, 9000) == "dgx2 enP2p1s0f1np1 is administratively down"
    bare = dict(GOOD, addresses=[])
    assert fc.link_problem("dgx2", "enP2p1s0f1np1", bare, mine, 9000) == \
        "dgx2 enP2p1s0f1np1 lacks 10.12.2.2/24 (has no IPv4)"
    dark = dict(GOOD, carrier=False, addresses=["10.12.2.2/24"])
    assert "no carrier" in fc.link_problem("dgx2", "enP2p1s0f1np1", dark, mine, 9000)


def test_a_cable_on_the_wrong_node_and_on_the_wrong_port_are_told_apart(triangle):
    heard = lldp.parse((RDMA / "lldpctl-keyvalue-after-swap.txt").read_text())  # dgx2 after its plugs swapped
    port0 = fc.cable_row("dgx2", link(triangle, "dgx2", "enp1s0f0np0"), heard["enp1s0f0np0"], True)
    assert port0["status"] == "fail" and port0["message"] == (
        "dgx2 enp1s0f0np0 reaches dgx1 enp1s0f0np0 (expected dgx3 enp1s0f1np1): "
        "port 0 of dgx2 is cabled to the wrong node")
    wrong_port = {"name": "dgx2", "port": "enp1s0f0np0"}
    row = fc.cable_row("dgx1", link(triangle, "dgx1", "enp1s0f0np0"), wrong_port, True)
    assert row["message"].endswith("port 0 of dgx1 is cabled to the wrong port of dgx2")


def test_a_cable_as_the_site_says_is_ok_and_unknown_without_lldp(triangle):
    heard = lldp.parse((RDMA / "lldpctl-keyvalue-dgx1.txt").read_text())  # a triangle as cabled
    mine = link(triangle, "dgx1", "enp1s0f0np0")
    assert fc.cable_row("dgx1", mine, heard["enp1s0f0np0"], True)["status"] == "ok"
    assert fc.cable_row("dgx1", mine, None, False)["status"] == "skipped"
    assert fc.cable_row("dgx1", mine, None, True)["status"] == "warn"


def test_the_gid_slot_holds_the_paths_ipv4_or_the_row_says_it_moved():
    path = {"netdev": "enp1s0f0np0", "hca": "rocep1s0f0", "address": "200.0.209.6"}
    good = rdma.gid_table(Host(str(RDMA / "gid-slot3")), "rocep1s0f0")
    moved = rdma.gid_table(Host(str(RDMA / "gid-moved")), "rocep1s0f0")
    assert fc.gid_row("dgx1", path, good, 3)["status"] == "ok"
    row = fc.gid_row("dgx1", path, moved, 3)
    assert row["status"] == "fail" and row["gid_index"] == 4
    assert "sits at GID index 4, not 3" in row["message"] and "ip link set enp1s0f0np0 down" in row["message"]
    assert fc.gid_row("dgx1", path, moved, "auto")["status"] == "ok"
    missing = fc.gid_row("dgx1", dict(path, address="10.12.1.1"), good, 3)
    assert missing["status"] == "fail" and "no RoCE v2 GID for 10.12.1.1" in missing["message"]


def test_link_speed_below_the_hardware_rate_is_a_warning_with_the_fix():
    path = {"netdev": "enp1s0f1np1"}
    assert fc.speed_row("dgx1", path, 200000, 200000)["status"] == "ok"
    slow = fc.speed_row("dgx1", path, 100000, 200000)
    assert slow["status"] == "warn" and "forced to 200G with auto-negotiation off" in slow["message"]
    assert fc.speed_row("dgx1", path, None, 200000)["status"] == "warn"  # no link: the link row fails


def test_failing_rows_become_drift_entries_and_the_text_table_shows_only_what_is_not_ok(triangle):
    mine = link(triangle, "dgx1", "enp1s0f0np0")
    rows = [fc.link_row("dgx1", mine, dict(GOOD, mtu=1500), 9000), fc.link_row("dgx1", mine, GOOD, 9000)]
    rows += fc.skipped_rows("dgx1", [mine], "gid", "GID check skipped: not a DGX Spark (a podman container)")
    assert fc.drift(rows, {mine["netdev"]: mine["cidr"]}) == [{
        "setting": "dgx1 enp1s0f0np0 link -> dgx2", "expected": rows[0]["expected"], "found": rows[0]["found"],
        "fix": None, "object": {"kind": "link", "name": "enp1s0f0np0"},  # None: the stage's run sets the MTU
        "aspect": "mtu", "path": mine["cidr"]}]
    assert drift.rows_from_result("dgx1", "fabric", "Ping matrix", {"drift": fc.drift(rows)})[0]["fix"] == (
        "ds41f run fabric")
    lines = fc.text(rows)
    assert lines[0] == "3 checks: 1 fail, 1 ok, 1 skipped"
    assert len(lines) == 4 and lines[2].startswith("dgx1  enp1s0f0np0  link   dgx2  fail")
    assert lines[3] == "skipped on dgx1: GID check skipped: not a DGX Spark (a podman container)"
