"""The firewall's table from every example site: it loads into nft, and what it accepts is what the site says.

The rules are judged by nft itself, in network namespaces of the test's own (nothing on the machine changes):
each site's ruleset is loaded and listed, and real connections are accepted or dropped by it."""

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.dgxspark.ds41f.plugins.module_utils import firewall, topology

ROOT = Path(__file__).resolve().parents[3]
SITES = sorted(p for p in (ROOT / "inventories").glob("*/*.spark.yml"))
NFT = shutil.which("nft")
needs_nft = pytest.mark.skipif(NFT is None or shutil.which("unshare") is None,
                               reason="nft and unshare are installed by .ci/run (nftables, util-linux)")


def cluster_of(site):
    data = yaml.safe_load(site.read_text())
    return data, topology.build(data)


def rules_for(site, node_name):
    data, cluster = cluster_of(site)
    nodes = [{"address": n.address} for n in cluster.nodes]
    cables = cluster.cable_table()
    head = cluster.nodes[0].name
    api = {"port": 8000, "sources": [data["management_network"]]} if node_name == head else None
    ssh = {"port": 22, "sources": [data["management_network"]], "interfaces": []}
    return firewall.ruleset(firewall.node_addresses(nodes, cables), ssh, api, []), cluster


def test_every_address_of_every_node_is_accepted_and_nothing_else():
    for site in SITES:
        _, cluster = cluster_of(site)
        cables = cluster.cable_table()
        found = firewall.node_addresses([{"address": n.address} for n in cluster.nodes], cables)
        wanted = {n.address for n in cluster.nodes}
        for cable in cables:
            wanted.update(cable["addresses"].values())
        assert set(found) == wanted, site


@needs_nft
@pytest.mark.parametrize("site", SITES, ids=lambda p: p.parent.name)
def test_each_sites_ruleset_loads_and_lists_as_nft_writes_it(site):
    _, cluster = cluster_of(site)
    for node in cluster.nodes:
        text, _ = rules_for(site, node.name)
        proc = subprocess.run(["unshare", "--net", "sh", "-c", "nft -f - && nft -f - && nft -s list table inet ds41f"],
                              input=text + text, text=True, capture_output=True)
        # loaded twice in a row: the file replaces only its own table, so a second load is no error
        assert proc.returncode == 0, proc.stderr
        listed = proc.stdout
        assert "policy drop" in listed
        assert ("tcp dport 8000" in listed) == (node.rank == 0)  # the API on the head only


@needs_nft
def test_other_tables_survive_a_reload():
    """Docker's and Tailscale's tables are never touched: a reload replaces only inet ds41f."""
    text, _ = rules_for(SITES[0], "none")
    script = ("nft add table ip filter && nft add chain ip filter DOCKER && nft -f - && nft -s list ruleset")
    proc = subprocess.run(["unshare", "--net", "sh", "-c", script], input=text, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert "table ip filter" in proc.stdout and "chain DOCKER" in proc.stdout


@pytest.mark.parametrize("field,value", [
    ("ssh", {"port": 22, "sources": ["0.0.0.0/0"]}),
    ("ssh", {"port": 22, "sources": ["::/0"]}),
    ("ssh", {"port": 22, "sources": ["10.0.0.0/33"]}),
    ("ssh", {"port": 22, "sources": ["example.com"]}),
    ("ssh", {"port": 0, "sources": ["10.0.0.0/8"]}),
    ("ssh", {"port": 22, "sources": ["10.0.0.0/8"], "interfaces": ["tailscale0; accept"]}),
    ("allow", [{"port": 9100, "proto": "sctp", "sources": ["10.0.0.1"]}]),
    ("allow", [{"port": 9100, "sources": []}]),
    ("allow", [{"port": "9100", "sources": ["10.0.0.1"]}]),
    ("allow", [{"port": 9100, "sources": ["10.0.0.1\n}\nchain x {"]}]),
])
def test_a_value_the_rules_cannot_hold_is_refused_naming_its_field(field, value):
    ssh = value if field == "ssh" else {"port": 22, "sources": ["10.0.0.0/8"]}
    allow = value if field == "allow" else []
    with pytest.raises(firewall.FirewallError) as err:
        firewall.ruleset(["10.0.0.1"], ssh, None, allow)
    assert "Fix:" in str(err.value)
    assert str(err.value).split(":")[0].startswith(("firewall_", "ssh", "nodes"))


def test_the_controllers_next_ssh_connection_must_be_accepted():
    ssh = {"port": 22, "sources": ["192.168.1.0/24"], "interfaces": ["tailscale0"]}
    nodes = ["192.168.1.11", "10.12.1.1"]
    assert firewall.accepts("192.168.1.50", nodes, ssh)
    assert firewall.accepts("10.12.1.1", nodes, ssh)  # a node as the controller
    assert firewall.accepts("100.64.3.4", nodes, ssh, "tailscale0")
    assert not firewall.accepts("100.64.3.4", nodes, ssh, "eth0")
    assert not firewall.accepts("172.16.0.9", nodes, ssh)
    assert firewall.accepts(None, nodes, ssh)  # a local run


LISTENER = """
import socket, sys, time
socks = []
for port in map(int, sys.argv[1:]):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen()
    socks.append(s)
print("listening", flush=True)
time.sleep(60)
"""
CONNECT = """
import socket, sys
for port in map(int, sys.argv[2:]):
    try:
        socket.create_connection((sys.argv[1], port), 1.0).close()
        print(port, "open")
    except OSError:
        print(port, "closed")
"""


def wait_for_exec(pid, name, tries=100):
    for _ in range(tries):
        if Path("/proc/%d/comm" % pid).read_text().strip() == name:
            return
        time.sleep(0.02)
    raise AssertionError("%s did not start" % name)


def ns(pid, *argv, **kw):
    proc = subprocess.run(["nsenter", "-t", str(pid), "-n", *argv], capture_output=True, text=True, **kw)
    assert proc.returncode == 0, (argv, proc.stderr)
    return proc


@needs_nft
def test_what_the_table_accepts_from_whom_as_nft_decides_it():
    """Connections from a namespace beside the node's, as nft decides them: SSH and the API from the management
    network, every port from a cluster node's address, nothing from elsewhere. Two network namespaces of the test's
    own joined by a veth pair; real listeners on the node's side, real connections from the other."""
    if shutil.which("ip") is None or shutil.which("nsenter") is None:
        pytest.fail("iproute2 and util-linux (ip, nsenter) are installed by .ci/run")
    ssh = {"port": 2222, "sources": ["198.18.0.0/24"]}
    text = firewall.ruleset(["198.18.1.2"], ssh, {"port": 8000, "sources": ["198.18.0.0/24"]}, [])
    node = subprocess.Popen(["unshare", "--net", "sleep", "60"])
    client = subprocess.Popen(["unshare", "--net", "sleep", "60"])
    listener = None
    try:
        for proc in (node, client):  # each namespace is there once unshare runs sleep in it
            wait_for_exec(proc.pid, "sleep")
        ns(node.pid, "ip", "link", "add", "name", "fwnode", "type", "veth", "peer", "name", "fwclient", "netns",
           str(client.pid))
        # one /16 on both ends: every address the test uses is on the link
        ns(node.pid, "sh", "-ec", "ip link set lo up; ip link set fwnode up; ip addr add 198.18.0.1/16 dev fwnode")
        ns(client.pid, "sh", "-ec", "ip link set lo up; ip link set fwclient up")
        ns(node.pid, "nft", "-f", "-", input=text)
        listener = subprocess.Popen(["nsenter", "-t", str(node.pid), "-n", "python3", "-c", LISTENER,
                                     "2222", "8000", "9999"], stdout=subprocess.PIPE, text=True)
        assert listener.stdout.readline().strip() == "listening"
        results = {}
        for source in ("198.18.0.7", "198.18.1.2", "198.18.5.9"):
            ns(client.pid, "sh", "-ec", "ip addr flush dev fwclient; ip addr add %s/16 dev fwclient" % source)
            out = ns(client.pid, "python3", "-c", CONNECT, "198.18.0.1", "2222", "8000", "9999").stdout
            results[source] = dict(line.split() for line in out.splitlines())
        assert results["198.18.0.7"] == {"2222": "open", "8000": "open", "9999": "closed"}  # management network
        assert results["198.18.1.2"] == {"2222": "open", "8000": "open", "9999": "open"}  # a node: every port
        assert results["198.18.5.9"] == {"2222": "closed", "8000": "closed", "9999": "closed"}  # anyone else
    finally:
        for proc in (listener, node, client):
            if proc:
                proc.kill()
