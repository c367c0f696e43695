# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Ring transit: plain IP between ranks two apart, through a neighbour.

RDMA on the switchless ring only ever talks to neighbours, but NFS, ssh or a health probe between ranks
two apart has no cable. Each node routes every fabric /24 it is not on through the neighbour that is on
it, using the same PCIe path, and forwards for its neighbours (``net.ipv4.ip_forward`` and an ACCEPT in
Docker's DOCKER-USER chain, whose FORWARD drop otherwise looks exactly like a dead cable).
"""

from __future__ import annotations

from ansible_collections.dgxspark.ds41f.plugins.module_utils.fabric_check import port_of


def routes(node, links, cables):
    """[{netdev, to, via}] for ``node``: each /24 of a node it has no cable to, via the neighbour on it
    (same PCIe path)."""
    mine = {link["cidr"] for link in links}
    via = {}  # (neighbour, pcie path) -> (my netdev, neighbour's address)
    for link in links:
        if link["peer"] is not None:
            via.setdefault((link["peer"], link["pcie"]), (link["netdev"], link["peer_address"]))
    near = {node} | {link["peer"] for link in links}
    out = []
    for row in cables:
        if row["cidr"] in mine or row["b"] == "switch" or {row["a"], row["b"]} <= near:
            continue  # on this node, or between nodes it already reaches directly
        pcie = port_of(row["a_netdev"])[1]
        for neighbour in (row["a"], row["b"]):
            hop = via.get((neighbour, pcie))
            if hop:
                out.append({"netdev": hop[0], "to": row["cidr"], "via": hop[1]})
                break
    return sorted(out, key=lambda r: r["to"])


def forward_rules(links):
    """(in netdev, out netdev) pairs to ACCEPT in DOCKER-USER: fabric to fabric only."""
    netdevs = sorted(link["netdev"] for link in links)
    return [(a, b) for a in netdevs for b in netdevs if a != b]
