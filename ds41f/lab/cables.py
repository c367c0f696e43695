"""ConnectX-7 cables as veth pairs between lab nodes, and a bridge namespace as the switch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ds41f import paths
from ds41f.lab import podman


def _ip(*args, netns_pid=None, netns=None, check=True):
    cmd = ["ip", *map(str, args)]
    if netns_pid is not None:
        cmd = ["nsenter", "-t", str(netns_pid), "-n", *cmd]
    elif netns is not None:
        cmd = ["ip", "-n", netns, *map(str, args)]
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if check and proc.returncode != 0:
        raise podman.LabError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
    return proc


def pid(container):
    value = podman.inspect(container, "{{.State.Pid}}")
    if value in ("", "0"):
        raise podman.LabError("lab node %s is not running. Fix: ds41f lab up again." % container)
    return int(value)


def has_link(netns_pid, netdev):
    return _ip("link", "show", netdev, netns_pid=netns_pid, check=False).returncode == 0


def connect(container_a, netdev_a, container_b, netdev_b):
    """One cable: a veth pair created straight inside both nodes under their CX7 names."""
    pa, pb = pid(container_a), pid(container_b)
    if has_link(pa, netdev_a) or has_link(pb, netdev_b):
        return False
    _ip("link", "add", netdev_a, "netns", pa, "type", "veth", "peer", "name", netdev_b, "netns", pb)
    return True


def disconnect(container, netdev):
    """Pull a cable: deleting one end of a veth removes both."""
    p = pid(container)
    if has_link(p, netdev):
        _ip("link", "del", netdev, netns_pid=p)
        return True
    return False


def switch_netns(lab):
    return "ds41f-%s-sw" % lab


def ensure_switch(lab, mtu=9000):
    ns = switch_netns(lab)
    if ns not in subprocess.run(["ip", "netns", "list"], text=True, stdout=subprocess.PIPE).stdout.split():
        subprocess.run(["ip", "netns", "add", ns], check=True)
    if _ip("link", "show", "br0", netns=ns, check=False).returncode != 0:
        _ip("link", "add", "br0", "type", "bridge", netns=ns)
    _ip("link", "set", "br0", "mtu", mtu, "up", netns=ns)
    return ns


def connect_switch(lab, container, netdev, switch_port, mtu=9000):
    """One node port path to the switch bridge; the switch side is up at the fabric MTU."""
    ns = switch_netns(lab)
    p = pid(container)
    if has_link(p, netdev):
        return False
    _ip("link", "del", switch_port, netns=ns, check=False)  # a stale end from a node that restarted
    _ip("link", "add", switch_port, "netns", ns, "type", "veth", "peer", "name", netdev, "netns", p)
    _ip("link", "set", switch_port, "mtu", mtu, "master", "br0", "up", netns=ns)
    return True


def remove_switch(lab):
    ns = switch_netns(lab)
    subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# -- moving plugs (miswire tests) -----------------------------------------------------------------------

def _saved(netns_pid, netdev):
    """MTU, link state and IPv4 addresses of a netdev: what stays with the port when a plug moves."""
    info = json.loads(_ip("-j", "addr", "show", "dev", netdev, netns_pid=netns_pid).stdout)[0]
    return {"mtu": info["mtu"], "up": "UP" in info["flags"],
            "addresses": ["%s/%d" % (a["local"], a["prefixlen"]) for a in info.get("addr_info", [])
                          if a.get("family") == "inet"]}


def _restore(netns_pid, netdev, state):
    _ip("link", "set", "dev", netdev, "mtu", state["mtu"], netns_pid=netns_pid)
    for address in state["addresses"]:
        _ip("address", "replace", address, "dev", netdev, netns_pid=netns_pid)
    if state["up"]:
        _ip("link", "set", "dev", netdev, "up", netns_pid=netns_pid)


def wiring(state_dir, cluster):
    """{(node, port): (node, port)} as the lab is cabled now: the site's cabling, plus any swaps made."""
    record = Path(state_dir) / "wiring.json"
    if record.exists():
        return {tuple(json.loads(k)): tuple(v) for k, v in json.loads(record.read_text()).items()}
    out = {}
    for row in cluster.cable_table():
        if row["b"] != "switch":
            out[(row["a"], row["a_port"])] = (row["b"], row["b_port"])
            out[(row["b"], row["b_port"])] = (row["a"], row["a_port"])
    return out


def swap(container, state_dir, cluster, end_a, end_b):
    """Exchange the far ends of the cables at two node ports, both PCIe paths, as if two plugs were moved.

    ``container(node)`` names a node's container. Each netdev keeps its MTU, link state and addresses
    (they belong to the port, not to the cable). Returns the new far ends of ``end_a`` and ``end_b``.
    """
    netdev = paths.topology().port_netdev
    now = wiring(state_dir, cluster)
    for end in (end_a, end_b):
        if end not in now:
            raise podman.LabError("%s:%d has no cable in this lab." % end)
    far_a, far_b = now[end_a], now[end_b]
    if far_a == end_b:
        raise podman.LabError("%s:%d and %s:%d are the two ends of one cable." % (*end_a, *end_b))
    for pcie in (1, 2):
        ends = (end_a, far_a, end_b, far_b)
        saved = {end: _saved(pid(container(end[0])), netdev(end[1], pcie)) for end in ends}
        disconnect(container(end_a[0]), netdev(end_a[1], pcie))
        disconnect(container(end_b[0]), netdev(end_b[1], pcie))
        for mine, far in ((end_a, far_b), (end_b, far_a)):
            connect(container(mine[0]), netdev(mine[1], pcie), container(far[0]), netdev(far[1], pcie))
        for end in ends:
            _restore(pid(container(end[0])), netdev(end[1], pcie), saved[end])
    now.update({end_a: far_b, far_b: end_a, end_b: far_a, far_a: end_b})
    (Path(state_dir) / "wiring.json").write_text(json.dumps({json.dumps(list(k)): list(v) for k, v in now.items()}))
    return far_b, far_a
