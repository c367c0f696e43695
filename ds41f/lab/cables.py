"""ConnectX-7 cables as veth pairs between lab nodes, and a bridge namespace as the switch."""

from __future__ import annotations

import subprocess

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
