# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Netplan for the ConnectX-7 paths: our file from the topology, and the other owners we remove.

``render`` turns a node's ``spark_links`` into the text of ``/etc/netplan/40-cx7.yaml``: one static
address per path in its own /24, the fabric MTU, no DHCP, no IPv6 (so the RoCE v2 GID slot of the IPv4
address stays put), ``optional`` so a missing cable never blocks boot. The text is built by hand, keys in
a fixed order, so the same links always give the same bytes (a re-run compares equal).

``strays`` and ``without`` find and cut CX7 stanzas out of other netplan files; ``nm_interface`` reads the
netdev a NetworkManager keyfile binds to. A second owner of a CX7 netdev silently undoes our settings at
the next reboot, so the fabric stage removes it (keeping a backup).
"""

from __future__ import annotations

import configparser

from ansible_collections.dgxspark.ds41f.plugins.module_utils.topology import ALL_NETDEVS

HEADER = ("# Written by the dgxspark.ds41f fabric stage from the site's topology.\n"
          "# Local edits are overwritten on the next run: change the site file instead.\n")
RENDERERS = ("NetworkManager", "networkd")
# Two PCIe functions of one port share one wire (and, on a switch, one L2 segment with every other node):
# each must answer ARP only for its own address and announce from it, or replies come from the wrong
# function ("ARP flux") and traffic, RoCE's included, lands on the twin.
ARP_SETTINGS = (("arp_ignore", "1"), ("arp_announce", "2"))


def _quote(value):
    """A YAML scalar netplan reads back unchanged (names of NetworkManager profiles contain spaces)."""
    return '"%s"' % str(value).replace("\\", "\\\\").replace('"', '\\"')


def render(links, mtu, renderer, routes=None):
    """The text of the CX7 netplan file. ``links``: spark_links rows (netdev, address, prefix, peer, path).

    ``routes``: optional [{netdev, to, via}] (ring transit through a neighbour).
    """
    if renderer not in RENDERERS:
        raise ValueError("renderer must be one of %s, not %r" % (", ".join(RENDERERS), renderer))
    by_netdev = {}
    for route in routes or []:
        by_netdev.setdefault(route["netdev"], []).append(route)
    lines = [HEADER.rstrip("\n"), "network:", "  version: 2", "  renderer: %s" % renderer, "  ethernets:"]
    for link in sorted(links, key=lambda item: item["netdev"]):
        netdev = link["netdev"]
        lines += [
            "    %s:" % netdev,
            "      addresses: [%s/%d]" % (link["address"], link["prefix"]),
            "      mtu: %d" % mtu,
            "      dhcp4: false",
            "      dhcp6: false",
            "      accept-ra: false",
            "      link-local: []",
            "      optional: true",
        ]
        extra = sorted(by_netdev.get(netdev, []), key=lambda r: r["to"])
        if extra:
            lines.append("      routes:")
            for route in extra:
                lines += ["        - to: %s" % route["to"], "          via: %s" % route["via"]]
        if renderer == "NetworkManager":
            peer = link.get("peer") or "switch"
            lines += ["      networkmanager:",
                      "        name: %s" % _quote("cx7 %s path %s" % (peer, link.get("path", "?")))]
    return "\n".join(lines) + "\n"


def arp_sysctl(netdevs):
    """The sysctl.d text of ARP_SETTINGS for the CX7 netdevs (applied per netdev by udev as each appears)."""
    lines = [line for line in HEADER.splitlines()]
    for netdev in sorted(netdevs):
        lines += ["net.ipv4.conf.%s.%s = %s" % (netdev, key, value) for key, value in ARP_SETTINGS]
    return "\n".join(lines) + "\n"


def nm_connection_name(link):
    """The NetworkManager profile name netplan gives our stanza (see ``render``)."""
    return "cx7 %s path %s" % (link.get("peer") or "switch", link.get("path", "?"))


def _yaml():
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - depends on the node
        raise RuntimeError("PyYAML is missing on this node (python3-yaml); it is needed to read other "
                           "netplan files. Fix: apt-get install python3-yaml") from exc
    return yaml


def _ethernets(text):
    data = _yaml().safe_load(text) if text and text.strip() else None
    if not isinstance(data, dict):
        return data, {}
    network = data.get("network")
    if not isinstance(network, dict):
        return data, {}
    eth = network.get("ethernets")
    return data, eth if isinstance(eth, dict) else {}


def strays(text, netdevs=ALL_NETDEVS):
    """The CX7 netdevs another netplan file configures (its ``ethernets`` keys, or a ``match: name``)."""
    _, eth = _ethernets(text)
    found = []
    for key, stanza in eth.items():
        name = key
        if isinstance(stanza, dict) and isinstance(stanza.get("match"), dict):
            name = stanza["match"].get("name", key)
        if name in netdevs:
            found.append(str(key))
    return sorted(found)


def without(text, keys):
    """The file with the ``ethernets`` entries ``keys`` cut out; None when nothing else would be left."""
    data, eth = _ethernets(text)
    for key in keys:
        eth.pop(key, None)
    network = data["network"]
    if not eth:
        network.pop("ethernets", None)
    if not set(network) - {"version", "renderer"}:
        return None
    return _yaml().safe_dump(data, default_flow_style=False, sort_keys=False)


def nm_interface(text):
    """The netdev a NetworkManager keyfile profile binds to (``[connection] interface-name``), or None."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if not parser.has_section("connection"):
        return None
    return parser.get("connection", "interface-name", fallback=None)
