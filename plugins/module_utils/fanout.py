# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Who sends what to whom when one node's copy (checkpoint or image) must reach the others.

Every node that lacks the copy gets one parent: a node that holds it, or one that receives it earlier
and relays it file by file as each arrives. On switchless shapes a parent must be cabled to its child
(the ring has no cable between ranks two apart, so dgx3 receives through dgx2); on a switch any node
will do, but no sender feeds more than ``width`` children, so the head's ports are not split N ways.
Because relays forward each file as soon as it is verified, N nodes take about one copy's time plus
one file per hop, not N copies.

The addresses a child dials are its parent's fabric addresses on the cable (or rail) they share,
both PCIe paths, then the parent's management address as the fallback when the fabric is not up.
"""

from __future__ import annotations


def neighbours(nodes, cables):
    """{node: set(nodes it can reach directly over the fabric)} from the inventory's ``spark_cables``."""
    near = {n: set() for n in nodes}
    for row in cables:
        if row.get("b") == "switch":
            on_rail = [n for n in row["addresses"] if n in near]
            for n in on_rail:
                near[n].update(m for m in on_rail if m != n)
        elif row["a"] in near and row["b"] in near:
            near[row["a"]].add(row["b"])
            near[row["b"]].add(row["a"])
    return near


def plan(nodes, cables, have, need, width=3):
    """{child: {parent, wave}} for every node in ``need``; ``nodes`` in rank order.

    ``have``: nodes holding a verified copy. Raises ValueError naming the nodes no path reaches.
    """
    near = neighbours(nodes, cables)
    order = {n: i for i, n in enumerate(nodes)}
    holders = {n: 0 for n in nodes if n in have}  # sender -> children so far
    if not holders and need:
        raise ValueError("no node holds a verified copy to send from")
    waiting = [n for n in nodes if n in need and n not in have]
    result, wave = {}, 0
    while waiting:
        wave += 1
        placed = []
        for child in waiting:
            senders = [p for p in holders if p in near[child] and holders[p] < width]
            if not senders:
                continue
            parent = min(senders, key=lambda p: (holders[p], order[p]))
            holders[parent] += 1
            result[child] = {"parent": parent, "wave": wave}
            placed.append(child)
        if not placed:
            raise ValueError("no fabric path reaches %s from a node holding a copy" % ", ".join(waiting))
        for child in placed:
            holders[child] = 0
            waiting.remove(child)
    return result


def fabric_addresses(cables, child, parent):
    """The parent's addresses on the cables (or switch rails) it shares with the child, path order."""
    found = []
    for row in sorted(cables, key=lambda r: (r.get("path", 0), r.get("cidr", ""))):
        ends = {row["a"], row["b"]}
        addrs = row.get("addresses", {})
        if (row.get("b") == "switch" and child in addrs and parent in addrs) or ends == {child, parent}:
            address = addrs.get(parent)
            if address and address not in found:
                found.append(address)
    return found


def endpoints(nodes, cables, management, have, need, width=3):
    """What each child dials: {child: {name, wave, addresses, management_address}}, ``name`` its parent.

    ``management``: {node: management address} (the inventory's ansible_host).
    """
    out = {}
    for child, step in plan(nodes, cables, have, need, width).items():
        parent = step["parent"]
        out[child] = {"name": parent, "wave": step["wave"], "addresses": fabric_addresses(cables, child, parent),
                      "management_address": management[parent]}
    return out


def children(endpoints_by_child, node):
    """The children that ``node`` sends to, sorted."""
    return sorted(c for c, e in endpoints_by_child.items() if e["name"] == node)
